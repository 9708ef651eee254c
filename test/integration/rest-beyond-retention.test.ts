/**
 * A board past the retention horizon over REST (issue 38): once the recorded wager horizon is 10 October, an
 * October board of whole days still answers, and one that starts inside an hour before the horizon is refused with
 * 400, code `out_of_range` and the message naming the horizon, never answered short. The message says the raw
 * wagers "will be deleted" while the pruning run has not begun deleting them, "were deleted" once it has (issue 47).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOV_1, OCT_1, OCT_16 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { errorBody, OPERATION, restCall } from "../support/rest.js";
import { startTestServer, type TestServer } from "../support/server.js";

const img = (name: string) => `https://img.example.test/${name}.png`;
const OCT_10 = OCT_1 + 9 * 86_400; // 1791590400
let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer("beyond_retention", {}, { now: () => NOV_1 + 3600 });
  const db = server.database.db;
  key = (await createKey(db, "aff-horizon")).secret;
  await addBoard(db, "aff-horizon", [
    ["h-1", "early", img("early"), ["10.5", OCT_1 + 3600], ["2", OCT_16]],
    ["h-2", "late", img("late"), ["7", OCT_16 + 60]],
  ]);
  // As a pruning run would record it (nothing deleted: the refusal does not depend on it).
  await db.write.query("UPDATE retention_horizons SET horizon = ?, moved_at = ? WHERE kind = 'wagers'", [
    OCT_10,
    NOV_1,
  ]);
});

afterAll(async () => {
  await server?.close();
});

const board = (startTimestamp: number, endTimestamp: number) =>
  restCall(`${server.baseUrl}${OPERATION}`, { key, body: { startTimestamp, endTimestamp, numUsers: 10 } });

describe("a period before the retention horizon", () => {
  it("of whole days is answered from the daily totals", async () => {
    const reply = await board(OCT_1, NOV_1 - 1);
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      data: [
        { username: "early", avatar: img("early"), totalWagered: 12.5 },
        { username: "late", avatar: img("late"), totalWagered: 7 },
      ],
      errors: null,
    });
  });

  const refusal = (deleted: string) =>
    errorBody({
      code: "out_of_range",
      message:
        "this period needs raw wagers from before the retention horizon 2026-10-10 UTC (Unix time 1791590400) " +
        `and those ${deleted}. Before the horizon a period must start and end on whole UTC hours`,
    });

  it("that starts inside an hour is refused with out_of_range naming the horizon: they will be deleted", async () => {
    const reply = await board(OCT_1 + 1800, NOV_1 - 1);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(refusal("will be deleted"));
  });

  it("once the pruning run has begun deleting below the horizon, the refusal says they were deleted", async () => {
    // As the pruning run records it before its first batch (jobs/wager-retention.ts markPruning).
    await server.database.db.write.query("UPDATE retention_horizons SET pruned_below = horizon WHERE kind = 'wagers'");
    await server.app.horizons.refresh();
    const reply = await board(OCT_1 + 1800, NOV_1 - 1);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(refusal("were deleted"));
  });
});
