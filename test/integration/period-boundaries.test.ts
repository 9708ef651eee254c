/**
 * Both period bounds are inclusive, and adjacent periods [a, b-1] and [b, c]
 * count every wager exactly once (the half-month pattern leaderboard sites use).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NOV_1, OCT_1, OCT_16 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
let key: string;

async function top(startTimestamp: number, endTimestamp: number, numUsers = 10) {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ startTimestamp, endTimestamp, numUsers }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { data: { username: string; totalWagered: number }[]; errors: null };
}

beforeAll(async () => {
  server = await startTestServer("period_boundaries");
  const db = server.database.db;
  key = (await createKey(db, "aff-1")).secret;
  await addBoard(db, "aff-1", [
    // alice: the first second of the month, the last second of its first half, the last second of September
    ["u1", "alice", "https://a.example/1.png", ["1.00000001", OCT_1], ["2.5", OCT_16 - 1], ["1000", OCT_1 - 1]],
    // bob: the first second of the second half, the last second of the month, the first second of the next
    // month (never in October)
    ["u2", "bob", "", ["10", OCT_16], ["0.00000001", NOV_1 - 1], ["1000", NOV_1]],
  ]);
});

afterAll(async () => {
  await server?.close();
});

describe("inclusive bounds", () => {
  it("counts wagers at the first and the last second of the period", async () => {
    expect(await top(OCT_1, NOV_1 - 1)).toEqual({
      data: [
        { username: "bob", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 10.00000001 },
        { username: "alice", avatar: "https://a.example/1.png", totalWagered: 3.50000001 },
      ],
      errors: null,
    });
  });

  it("splits the month into two half-months that sum to it with no double count", async () => {
    const first = await top(OCT_1, OCT_16 - 1);
    const second = await top(OCT_16, NOV_1 - 1);
    expect(first.data.map((e) => [e.username, e.totalWagered])).toEqual([["alice", 3.50000001]]);
    expect(second.data.map((e) => [e.username, e.totalWagered])).toEqual([["bob", 10.00000001]]);
  });

  it("treats start equal to end as a one-second period", async () => {
    expect((await top(OCT_16, OCT_16)).data.map((e) => [e.username, e.totalWagered])).toEqual([["bob", 10]]);
    expect((await top(OCT_16 + 1, OCT_16 + 1)).data).toEqual([]);
  });
});
