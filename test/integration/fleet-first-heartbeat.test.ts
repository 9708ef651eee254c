/**
 * The fleet's first heartbeat waits for Redis's connection (issue 38): a start with a healthy Redis logs no
 * warning (it used to log "fleet unreachable (Redis)" and then "reachable again" 40–180 ms later on every start),
 * and a Redis that is not there still gets its one warning.
 */
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { createRedisFleet } from "../../src/platform/redis/fleet.js";
import { freePort, sleep } from "../support/processes.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A logger whose lines land in `lines` (level and msg). */
function capturedLogger() {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const text of chunk.toString("utf8").split("\n")) {
        if (text !== "") lines.push(JSON.parse(text) as { level: number; msg: string });
      }
      callback();
    },
  });
  return { logger: createLogger("info", sink), lines };
}

describe("the fleet's first heartbeat", () => {
  it("waits for a healthy Redis: nothing is logged at warn, nothing says 'reachable again'", async () => {
    const { logger, lines } = capturedLogger();
    const fleet = createRedisFleet(REDIS_URL, `first-beat-${randomUUID()}`, logger);
    try {
      await sleep(1_000); // four heartbeats
      expect(fleet.members()).toEqual([fleet.self]);
    } finally {
      await fleet.close();
    }
    expect(lines.map((l) => [l.level, l.msg])).toEqual([]);
  });

  it("a Redis that is not there: one warning, and the instance counts itself alone", async () => {
    const { logger, lines } = capturedLogger();
    const fleet = createRedisFleet(`redis://127.0.0.1:${await freePort()}`, `first-beat-${randomUUID()}`, logger);
    try {
      await sleep(1_500);
      expect(fleet.members()).toEqual([fleet.self]);
    } finally {
      await fleet.close();
    }
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, "fleet unreachable (Redis): this instance computes every board itself until it returns"],
    ]);
  });
});
