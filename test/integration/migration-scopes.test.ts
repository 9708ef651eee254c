/**
 * Migration 9 (api key scopes) on a database that holds keys from before it: made with
 * migrations 1 to 8 only, with a secret, a publishable, a legacy-format and a revoked key written
 * as the previous version wrote them, then migrated. Every secret key has all four scopes, every
 * publishable key boards:read and races:read (in the column, as storage reads it, and as a
 * running app admits it: reads work, nothing lists them as restricted); a key the previous
 * version inserts afterwards (scopes NULL, a rolling deploy) reads the same way; running the
 * steps again changes nothing.
 */
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { findApiKeyById, listUsableApiKeys } from "../../src/keys/sql/api-keys.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { createDatabaseAtVersion, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, wager } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const ADMIN_TOKEN = "test-admin-token-migration-scopes-01";
const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 };
const ALL = ["boards:read", "races:read", "races:write", "webhooks:write"];
const READ = ["boards:read", "races:read"];

let database: TestDatabase;
let servers: IngestServers;
const made: Record<string, { id: string; secret: string }> = {};

/** A key row as version 8 wrote it (no scopes column then). */
async function insertAsBefore(
  name: string,
  kind: "secret" | "publishable",
  extra: { revoked?: boolean; legacy?: boolean } = {},
): Promise<void> {
  const generated = generateApiKey(kind);
  // A legacy key (tw_ and 32 base64url characters) was stored the same way: its SHA-256.
  const secret = extra.legacy === true ? `tw_${"A".repeat(16)}${"b_-c".repeat(4)}` : generated.secret;
  const { createHash } = await import("node:crypto");
  const hash = createHash("sha256").update(secret).digest();
  await database.db.write.query(
    `INSERT INTO api_keys (id, key_hash, affiliate_id, label, created_at, revoked_at, publishable, allowed_origins)
     SELECT ?, ?, id, 'before scopes', UNIX_TIMESTAMP(), ?, ?, ? FROM affiliates WHERE external_id = 'aff-old'`,
    [
      generated.id,
      hash,
      extra.revoked === true ? 1 : null,
      kind === "publishable" ? 1 : 0,
      kind === "publishable" ? '["https://old.example.com"]' : null,
    ],
  );
  made[name] = { id: generated.id, secret };
}

async function scopesColumn(): Promise<Map<string, string | null>> {
  const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT id, scopes FROM api_keys");
  return new Map(rows.map((r) => [String(r.id), r.scopes === null ? null : String(r.scopes)]));
}

beforeAll(async () => {
  database = await createDatabaseAtVersion("migration_scopes", 8);
  await addUsers(database.db, [{ id: "o-1", affiliateId: "aff-old", username: "old one", avatar: "" }]);
  await insertAsBefore("secret", "secret");
  await insertAsBefore("publishable", "publishable");
  await insertAsBefore("legacy", "secret", { legacy: true });
  await insertAsBefore("revoked", "secret", { revoked: true });
  expect((await migrate(database.db.write, MIGRATIONS)).applied.map((m) => m.version)).toEqual(
    MIGRATIONS.filter((m) => m.version >= 9).map((m) => m.version),
  );
  // Written by this version's ingest, which needs the schema it ships with (migration 12's column).
  await addWagers(database.db, [wager("o-1", "7.25", JAN.startTimestamp + 5)]);
  servers = await startIngestServers(database, { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
}, 60_000);

afterAll(async () => {
  await servers?.close();
});

describe("migration 9 on keys from before scopes", () => {
  it("writes every secret key's scopes as all four and every publishable key's as the two reads", async () => {
    expect(await scopesColumn()).toEqual(
      new Map([
        [made.secret?.id, "boards:read races:read races:write webhooks:write"],
        [made.publishable?.id, "boards:read races:read"],
        [made.legacy?.id, "boards:read races:read races:write webhooks:write"],
        [made.revoked?.id, "boards:read races:read races:write webhooks:write"],
      ]),
    );
    for (const name of ["secret", "legacy", "revoked"]) {
      expect([name, (await findApiKeyById(database.db.read, made[name]?.id ?? ""))?.scopes]).toEqual([name, ALL]);
    }
    expect((await findApiKeyById(database.db.read, made.publishable?.id ?? ""))?.scopes).toEqual(READ);
  });

  it("keeps every old key reading boards as before, and lists none of them as restricted", async () => {
    for (const name of ["secret", "legacy"]) {
      const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
        method: "POST",
        headers: { authorization: `Bearer ${made[name]?.secret}`, "content-type": "application/json" },
        body: JSON.stringify(JAN),
      });
      expect([name, response.status, ((await response.json()) as { data: unknown[] }).data.length]).toEqual([
        name,
        200,
        1,
      ]);
    }
    const board = await fetch(
      `${servers.publicUrl}/board?startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10&key=${made.publishable?.secret}`,
    );
    expect(board.status).toBe(200);
    await board.arrayBuffer();
    const listed = (await servers.adminClient(ADMIN_TOKEN).listApiKeys({ affiliateId: "aff-old" })).apiKeys;
    expect(listed.map((k) => k.scopes)).toEqual([[], [], [], []]);
  });

  it("reads a key inserted by the previous version (scopes NULL, a rolling deploy) as its kind's scopes", async () => {
    await insertAsBefore("late secret", "secret");
    await insertAsBefore("late publishable", "publishable");
    const usable = new Map((await listUsableApiKeys(database.db.read, 0)).map((k) => [k.id, k.scopes]));
    expect([usable.get(made["late secret"]?.id ?? ""), usable.get(made["late publishable"]?.id ?? "")]).toEqual([
      ALL,
      READ,
    ]);
    expect((await scopesColumn()).get(made["late secret"]?.id ?? "")).toBeNull();
  });

  it("changes nothing when its steps run again", async () => {
    const before = await scopesColumn();
    const connection = await database.db.write.getConnection();
    try {
      for (const step of MIGRATIONS.find((m) => m.version === 9)?.statements ?? []) {
        if (typeof step === "string") await connection.query(step);
        else await step({ connection, progress: () => undefined });
      }
    } finally {
      connection.release();
    }
    // The late keys (NULL) get the written-out scopes of their kind: the same scopes they read as.
    const after = await scopesColumn();
    expect(after.get(made["late secret"]?.id ?? "")).toBe("boards:read races:read races:write webhooks:write");
    expect(after.get(made["late publishable"]?.id ?? "")).toBe("boards:read races:read");
    for (const [id, scopes] of before) if (scopes !== null) expect(after.get(id)).toBe(scopes);
    expect((await migrate(database.db.write)).applied).toEqual([]);
  });
});
