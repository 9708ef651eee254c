/**
 * Logs are JSON lines and never carry keys or tokens, wherever they appear in a logged object
 * (moved from test/integration/metrics-and-logs.test.ts; no server needed).
 */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { TEST_INGEST_TOKEN } from "../support/ingest.js";

describe("logs", () => {
  it("are JSON lines with credentials redacted wherever they appear", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString("utf8")
            .split("\n")
            .filter((l) => l !== ""),
        );
        done();
      },
    });
    const logger = createLogger("info", sink);
    const secret = "tw_abcdefghijklmnopqrstuvwxyz012345";
    logger.info({ authorization: `Bearer ${secret}` }, "top-level header");
    logger.info({ headers: { authorization: `Bearer ${secret}` } }, "nested header");
    logger.info({ req: { headers: { authorization: `Bearer ${secret}` } } }, "request");
    logger.info({ key: secret, token: TEST_INGEST_TOKEN, call: { secret } }, "named");
    logger.flush();
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      expect(line).not.toContain(secret);
      expect(line).not.toContain(TEST_INGEST_TOKEN);
      expect(line).toContain("[redacted]");
    }
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed.map((p) => [p.level, p.service, p.msg])).toEqual([
      [30, "topwagers", "top-level header"],
      [30, "topwagers", "nested header"],
      [30, "topwagers", "request"],
      [30, "topwagers", "named"],
    ]);
  });
});
