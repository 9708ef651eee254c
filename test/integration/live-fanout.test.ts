/**
 * Fan-out scales with boards, not viewers: 500 viewers of one board cost the
 * database the same statements per change as one viewer (counted on the pool
 * the leaderboard reads from), and every viewer gets the new board.
 */
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { Pool } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { closeAfterAll } from "../support/lifecycle.js";
import { connectEsWatch, metricSample, type OpenStream } from "../support/live.js";

let servers: IngestServers;
let key = "";
let statements = 0;
const sessions: Http2SessionManager[] = [];
const viewers: OpenStream[] = [];
let wagerNumber = 0;

/** The pool with every statement counted (query and execute, the only ways the leaderboard reads). */
function counting(pool: Pool): Pool {
  return new Proxy(pool, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if ((property === "query" || property === "execute") && typeof value === "function") {
        return (...args: unknown[]) => {
          statements += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value;
    },
  });
}

function addViewers(n: number): OpenStream[] {
  const added: OpenStream[] = [];
  for (let i = 0; i < n; i++) {
    // At most 100 streams per HTTP/2 connection (the server's SETTINGS_MAX_CONCURRENT_STREAMS).
    if (viewers.length % 100 === 0) sessions.push(new Http2SessionManager(servers.publicUrl));
    const stream = connectEsWatch(
      `viewer ${viewers.length}`,
      createGrpcTransport({ baseUrl: servers.publicUrl, sessionManager: sessions.at(-1) as Http2SessionManager }),
      key,
      { ...JANUARY, numUsers: 10 },
    );
    viewers.push(stream);
    added.push(stream);
  }
  return added;
}

const recomputes = () => metricSample(servers.app.metrics, "topwagers_board_recomputes_total");

/** Records one wager and waits until every viewer has the board it makes; returns the statements and recomputes it cost. */
async function change(): Promise<{ statements: number; recomputes: number }> {
  await servers.app.caughtUp();
  const seen = viewers.map((v) => v.collected.boards.length);
  const before = { statements, recomputes: await recomputes() };
  wagerNumber += 1;
  await servers.client("grpc").recordWagers({
    wagers: [{ id: `fan-${wagerNumber}`, userId: "fan-u1", amount: "1.5", placedAt: BigInt(JAN_1_2025 + 60) }],
  });
  await Promise.all(viewers.map((v, i) => v.collected.board((seen[i] as number) + 1, 10_000)));
  await servers.app.caughtUp();
  return { statements: statements - before.statements, recomputes: (await recomputes()) - before.recomputes };
}

beforeAll(async () => {
  servers = await startIngestServers(
    "live_fanout",
    // The production default: the result cache on.
    { INGEST_TOKEN: TEST_INGEST_TOKEN, CACHE_TTL_MS: "10000", STREAM_LIMIT_PER_ADDRESS: "1000" },
    {},
    (db) => ({ ...db, leaderboard: counting(db.leaderboard), close: () => db.close() }) as typeof db,
  );
  key = (await createKey(servers.database.db, "aff-fan")).secret;
  await servers.client("grpc").upsertUsers({
    users: [
      { id: "fan-u1", affiliateId: "aff-fan", username: "fan one", avatar: "" },
      { id: "fan-u2", affiliateId: "aff-fan", username: "fan two", avatar: "" },
    ],
  });
  await servers.client("grpc").recordWagers({
    wagers: [{ id: "fan-0", userId: "fan-u2", amount: "100", placedAt: BigInt(JAN_1_2025 + 60) }],
  });
}, 60_000);

closeAfterAll(viewers, sessions, () => servers);

describe("fan-out", () => {
  it("costs 500 viewers of one board the same database statements per change as one viewer", async () => {
    await addViewers(1)[0]?.collected.board(1);
    const one = await change();
    expect(one.recomputes).toBe(1);
    expect(one.statements).toBeGreaterThanOrEqual(1);

    const more = addViewers(499);
    await Promise.all(more.map((v) => v.collected.board(1, 10_000)));
    // Joining viewers of a board that has a snapshot cost nothing either.
    const many = await change();
    expect(many).toEqual(one);
    const versions = new Set(viewers.map((v) => v.collected.boards.at(-1)?.version));
    expect(versions.size).toBe(1);
    expect(viewers[499]?.collected.boards.map((b) => b.data.length)).toEqual([2, 2]);
    expect(viewers[499]?.collected.boards.at(-1)?.data.map((e) => [e.username, e.totalWageredDecimal])).toEqual([
      ["fan two", "100"],
      ["fan one", "3"],
    ]);
  });
});
