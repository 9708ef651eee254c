/**
 * The Connect service implementations called through connect-es's in-memory router transport (no
 * socket, no HTTP) over a real test database: what each service answers, with exact values, apart
 * from the transports, which the other integration files cover. The wiring is
 * test/support/services-harness.ts, shared with the same services on the reference model
 * (test/unit/services-on-model.test.ts).
 */
import type { Transport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import { mariadbApiKeys, mariadbKeyRecords } from "../../src/keys/sql/key-stores.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { FEB_1_2026, JAN_1_2026 } from "../support/dates.js";
import { addBoard, createKey } from "../support/fixtures.js";
import {
  DEFAULT_AVATAR,
  ingestCases,
  januaryTop,
  keyCreationCases,
  refusedCallCases,
  servicesOn,
} from "../support/services-harness.js";

let database: TestDatabase;
/** TopWagersService, as on the public port. */
let publicTransport: Transport;
/** WagerIngestService and ApiKeyService, as on the internal port. */
let internalTransport: Transport;
let key: string;

beforeAll(async () => {
  database = await createTestDatabase("services_in_memory");
  const db = database.db;
  key = (await createKey(db, "aff-mem")).secret;
  await addBoard(db, "aff-mem", [
    ["m-1", "alice", "https://img.example.test/alice.png", ["1.00000001", JAN_1_2026], ["2.5", FEB_1_2026 - 1]],
    // bob's February wager is outside January.
    ["m-2", "bob", "", ["15000.5", JAN_1_2026 + 1], ["99", FEB_1_2026]],
  ]);
  await addBoard(db, "aff-other", [["o-1", "other", "", ["1000000", JAN_1_2026]]]);

  ({ publicTransport, internalTransport } = await servicesOn({
    standings: mariadbStandings(db.read),
    ingest: mariadbIngest(db.write),
    apiKeys: mariadbApiKeys(db.write),
    keyRecords: mariadbKeyRecords(db.read),
  }));
});

afterAll(async () => {
  await database?.drop();
});

describe("TopWagersService.getTopAffiliateWagersByPeriod", () => {
  refusedCallCases(() => ({ publicTransport, internalTransport, key }));

  it("answers the caller's affiliate for the period, both bounds inclusive, with exact totals", async () => {
    const response = await januaryTop(publicTransport, key);
    expect(
      response.data.map((e) => [e.rank, e.userId, e.username, e.avatar, e.totalWagered, e.totalWageredDecimal]),
    ).toEqual([
      [1, "m-2", "bob", DEFAULT_AVATAR, 15000.5, "15000.5"],
      [2, "m-1", "alice", "https://img.example.test/alice.png", 3.50000001, "3.50000001"],
    ]);
  });
});

describe("WagerIngestService", () => {
  ingestCases(() => ({ publicTransport, internalTransport, key }));
});

describe("ApiKeyService", () => {
  // The database's clock stamps a new key.
  keyCreationCases(() => ({ publicTransport, internalTransport, key }), {
    before: () => BigInt(Math.floor(Date.now() / 1000)),
    after: () => BigInt(Math.ceil(Date.now() / 1000)),
  });
});
