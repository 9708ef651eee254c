/**
 * The fleet shares answers only between instances that answer under the same retention horizons (issue 47, item 2),
 * on a real Redis: two transports of one fleet in one scope see each other and one answers the other's ask; once
 * their scopes differ (one has read a newer generation of the horizons) each counts itself alone and an ask across
 * is refused before the leader computes anything. A member written in the old key format (releases up to 0.4.0:
 * `topwagers:fleet:<name>:members`, whose answers know no horizon) is never listed.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { createRedisFleet } from "../../src/platform/redis/fleet.js";
import type { FleetAnswer, FleetRequest } from "../../src/ports/fleet.js";
import { sleep } from "../support/processes.js";

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const REQUEST: FleetRequest = {
  period: { affiliateId: 7, start: 1_000, end: 2_000, rankBy: "wagered" },
  minBasis: 0,
  fresh: false,
};
const ANSWER: FleetAnswer = { basis: 42, entries: [[1, "u1", "ann", "", "12.5", "12.5"]] };

/** Waits (at most 5 s: heartbeats every 250 ms, members alive for 1 s) until `done`. */
async function until(done: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 5_000; !done() && Date.now() < deadline; ) await sleep(50);
}

describe("the fleet's scope", () => {
  it("shares within one scope, never across scopes, and never with the old key format", async () => {
    const name = `scope-${randomUUID()}`;
    const scopes = { a: "h1", b: "h1" };
    const silent = createLogger("silent");
    const a = createRedisFleet(REDIS_URL, name, silent, () => scopes.a);
    const b = createRedisFleet(REDIS_URL, name, silent, () => scopes.b);
    const old = new Redis(REDIS_URL);
    let served = 0;
    a.serve(async () => {
      served += 1;
      return ANSWER;
    });
    try {
      // An instance of an older release, in its own key format, alive as far as its heartbeat says.
      await old.zadd(`topwagers:fleet:${name}:members`, Date.now(), "old-release-instance");
      await until(() => a.members().length === 2);
      expect([...a.members()].sort()).toEqual([a.self, b.self].sort());
      expect(await b.ask(a.self, REQUEST, 2_000)).toEqual(ANSWER);
      expect(served).toBe(1);

      scopes.b = "h2"; // b read a newer generation of the horizons
      await until(() => a.members().length === 1 && b.members().length === 1);
      expect(a.members()).toEqual([a.self]);
      expect(b.members()).toEqual([b.self]);
      expect(await b.ask(a.self, REQUEST, 2_000)).toBeUndefined();
      expect(served).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await old.del(`topwagers:fleet:${name}:members`);
      old.disconnect();
    }
  });
});
