/** One warn line when the database stops answering, one info line when it is back (issue 20, item 8). */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { databaseAvailability } from "../../src/platform/observability/database-availability.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString("utf8").split("\n")) if (text !== "") lines.push(JSON.parse(text));
      done();
    },
  });
  return { lines, logger: createLogger("info", sink) };
}

describe("database availability lines", () => {
  it("logs each outage once when it starts and once when it ends, however many probes see it", async () => {
    const { lines, logger } = capture();
    let now = 1_000_000;
    const outcomes = databaseAvailability(logger, () => now);
    outcomes.answered(); // up: nothing to say
    outcomes.failed(new Error("connect ECONNREFUSED 127.0.0.1:3306"));
    now += 400;
    outcomes.failed(new Error("connect ECONNREFUSED 127.0.0.1:3306"));
    outcomes.failed(new Error("connect ECONNREFUSED 127.0.0.1:3306"));
    now += 2_850;
    outcomes.answered();
    outcomes.answered();
    now += 10_000;
    outcomes.failed(new Error("Connection lost: The server closed the connection."));
    now += 1_500;
    outcomes.answered();
    logger.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(
      lines.map((l) => [l.level, l.msg, l.downSeconds, (l.err as { message?: string } | undefined)?.message]),
    ).toEqual([
      [
        40,
        "database unreachable; calls that need it answer unavailable until it is back",
        undefined,
        "connect ECONNREFUSED 127.0.0.1:3306",
      ],
      [30, "database reachable again after 3.25 s", 3.25, undefined],
      [
        40,
        "database unreachable; calls that need it answer unavailable until it is back",
        undefined,
        "Connection lost: The server closed the connection.",
      ],
      [30, "database reachable again after 1.5 s", 1.5, undefined],
    ]);
  });
});
