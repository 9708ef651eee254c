/**
 * Ids are opaque strings compared exactly: ids that differ only by trailing
 * spaces, case or Unicode normalisation are different users and wagers.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { OCT_1 } from "../support/dates.js";
import { addUsers, addWagers, createKey } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer("opaque_ids");
  key = (await createKey(server.database.db, "aff ")).secret;
  // "é" precomposed (U+00E9) and decomposed (e + U+0301) are different ids.
  const ids = ["pid", "pid ", "PID", "\u00e9", "e\u0301"];
  await addUsers(
    server.database.db,
    ids.map((id, i) => ({ id, affiliateId: "aff ", username: `user${i}`, avatar: "" })),
  );
  await addWagers(
    server.database.db,
    ids.map((id, i) => ({ id: `w${id}`, userId: id, amount: String(i + 1), placedAt: OCT_1 })),
  );
  // Same ids under an affiliate whose id differs only by the trailing space.
  await createKey(server.database.db, "aff");
});

afterAll(async () => {
  await server?.close();
});

it("keeps users whose ids differ only by spaces, case or normalisation apart", async () => {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ startTimestamp: OCT_1, endTimestamp: OCT_1, numUsers: 10 }),
  });
  const avatar = "https://www.gravatar.com/avatar/?d=mp&s=256";
  expect(await response.json()).toEqual({
    data: [
      { username: "user4", avatar, totalWagered: 5 },
      { username: "user3", avatar, totalWagered: 4 },
      { username: "user2", avatar, totalWagered: 3 },
      { username: "user1", avatar, totalWagered: 2 },
      { username: "user0", avatar, totalWagered: 1 },
    ],
    errors: null,
  });
  const [affiliates] = await server.database.db.read.query("SELECT external_id FROM affiliates ORDER BY external_id");
  expect(affiliates).toEqual([{ external_id: "aff" }, { external_id: "aff " }]);
});
