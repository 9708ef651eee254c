/**
 * A deleted race's history (issue 36, left item a) on real sockets over MariaDB: after a race nobody had seen is
 * deleted, `GET /races/{id}` is still 404 (as before), while `GET /races/{id}/history` answers its readers every
 * change, the deletion last with when and by whom; another affiliate's key gets the 404 of a race that never
 * existed. A deletion recorded before the owner was kept with it (0.3.0) is answered when an API key created or
 * deleted the race, and stays 404 when no key did. Expected bodies are written out by hand.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { bearerConnect } from "../support/calls.js";
import { createKey, secretAndPublishableKeys } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { OpenApiChecker } from "../support/openapi.js";
import { restCall } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-deleted-history-0123";
const NOW = Math.floor(Date.now() / 1000);
const DAY = 86_400;
/** A deleted race never started: no voids and no late wagers. */
const NOTHING_COUNTED = {
  voidedWagers: 0,
  usersAffected: 0,
  ranksMoved: null,
  lateWagers: { wagers: 0, usersAffected: 0, ranksMoved: null },
};

let servers: IngestServers;
let checker: OpenApiChecker;

beforeAll(async () => {
  checker = await OpenApiChecker.load();
  servers = await startIngestServers("race_deleted_history", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
});

afterAll(async () => {
  await servers?.close();
});

function raceClient(baseUrl: string, token: string) {
  return createClient(RaceService, bearerConnect(baseUrl, token));
}

async function get(path: string, key: string): Promise<{ status: number; json: unknown }> {
  const reply = await restCall(`${servers.publicUrl}${path}`, { method: "GET", key });
  const operation = path.endsWith("/history") ? "/races/{slugOrId}/history" : "/races/{slugOrId}";
  expect(checker.check(operation, "get", reply), reply.text).toEqual([]);
  return { status: reply.status, json: reply.json };
}

function notFound(id: string) {
  return { data: null, errors: [{ code: "not_found", message: `this affiliate has no race "${id}"` }] };
}

/** The `at` of each change, checked to be a time of this run, in order. */
function times(body: unknown): number[] {
  const at = (body as { data: { changes: { at: number }[] } }).data.changes.map((change) => change.at);
  expect(at.every((t) => t >= NOW && t <= NOW + 300)).toBe(true);
  expect(at).toEqual([...at].sort((x, y) => x - y));
  return at;
}

const rules = (slug: string) => ({
  slug,
  title: "Cup",
  startTimestamp: BigInt(NOW + 3 * DAY),
  endTimestamp: BigInt(NOW + 4 * DAY),
  prizes: ["100"],
});

describe("a race deleted with a key", () => {
  const affiliate = "dh-owner";
  let secret = { id: "", secret: "" };
  let publishable = { id: "", secret: "" };
  let other = { id: "", secret: "" };
  let raceId = "";

  beforeAll(async () => {
    ({ secret, publishable } = await secretAndPublishableKeys(servers.database.db, affiliate));
    other = await createKey(servers.database.db, "dh-other");
    const byKey = raceClient(servers.publicUrl, secret.secret);
    raceId = (await byKey.createRace({ rules: rules("gone") })).race?.id ?? "";
    await raceClient(servers.internalUrl, ADMIN_TOKEN).updateRace({
      affiliateId: affiliate,
      id: raceId,
      title: "Big cup",
    });
    await byKey.updateRace({ id: raceId, replaceExcludedUserIds: true, excludedUserIds: ["dh-staff"] });
    const deleted = await restCall(`${servers.publicUrl}/races/${raceId}`, { method: "DELETE", key: secret.secret });
    expect(deleted.status).toBe(200);
  });

  it("is still not found itself, on REST and GetRace", async () => {
    expect(await get(`/races/${raceId}`, secret.secret)).toEqual({ status: 404, json: notFound(raceId) });
    const refused = await raceClient(servers.publicUrl, secret.secret)
      .getRace({ idOrSlug: raceId })
      .catch((error: unknown) => ConnectError.from(error));
    expect(refused instanceof ConnectError ? refused.code : refused).toBe(Code.NotFound);
    // Its slug names no race either.
    expect(await get("/races/gone/history", secret.secret)).toEqual({ status: 404, json: notFound("gone") });
  });

  it("answers its history to its readers, ending with the deletion: when, by whom", async () => {
    for (const [reader, key] of [
      // A publishable key sees an API key of the affiliate acted, not which; a secret key sees which.
      [publishable.secret, { kind: "key", id: "" }],
      [secret.secret, { kind: "key", id: secret.id }],
    ] as const) {
      await expectDeletedHistory(reader, key);
    }
  });

  async function expectDeletedHistory(reader: string, key: { kind: string; id: string }): Promise<void> {
    const reply = await get(`/races/${raceId}/history`, reader);
    const at = times(reply.json);
    expect(reply).toEqual({
      status: 200,
      json: {
        data: {
          raceId,
          changes: [
            { at: at[0], kind: "created", actor: key, fields: [] },
            {
              at: at[1],
              kind: "updated",
              actor: { kind: "admin", id: "" },
              fields: [{ field: "title", before: "Cup", after: "Big cup" }],
            },
            // REST never names an excluded user.
            {
              at: at[2],
              kind: "updated",
              actor: key,
              fields: [{ field: "excludedUserIds", added: [""], removed: [] }],
            },
            { at: at[3], kind: "deleted", actor: key, fields: [] },
          ],
          standings: NOTHING_COUNTED,
        },
        errors: null,
      },
    });
    expect(at).toHaveLength(4);
  }

  it("is not another affiliate's to read: the 404 of a race that never was", async () => {
    expect(await get(`/races/${raceId}/history`, other.secret)).toEqual({ status: 404, json: notFound(raceId) });
    const never = "race_aaaaaaaaaaaaaaaaaaaa";
    expect(await get(`/races/${never}/history`, secret.secret)).toEqual({ status: 404, json: notFound(never) });
  });
});

describe("a race deleted by the admin", () => {
  it("answers its history to the owner's keys, the admin as the deletion's actor", async () => {
    const affiliate = "dh-admin";
    const key = await createKey(servers.database.db, affiliate);
    const admin = raceClient(servers.internalUrl, ADMIN_TOKEN);
    const id = (await admin.createRace({ affiliateId: affiliate, rules: rules("by-admin") })).race?.id ?? "";
    await admin.deleteRace({ affiliateId: affiliate, id });
    const reply = await get(`/races/${id}/history`, key.secret);
    const at = times(reply.json);
    const actor = { kind: "admin", id: "" };
    expect(reply).toEqual({
      status: 200,
      json: {
        data: {
          raceId: id,
          changes: [
            { at: at[0], kind: "created", actor, fields: [] },
            { at: at[1], kind: "deleted", actor, fields: [] },
          ],
          standings: NOTHING_COUNTED,
        },
        errors: null,
      },
    });
  });
});

describe("a deletion recorded before its owner was kept (0.3.0)", () => {
  /** Writes a race's history as 0.3.0 did: no owner in the deletion's detail. */
  async function history0_3(raceId: string, rows: readonly [number, string, string, string][]): Promise<void> {
    for (const [at, kind, actorKind, actorId] of rows) {
      await servers.database.db.write.query(
        "INSERT INTO race_history (race_public_id, at, kind, actor_kind, actor_id, detail) VALUES (?, ?, ?, ?, ?, ?)",
        [raceId, at, kind, actorKind, Buffer.from(actorId, "utf8"), '{"fields":[]}'],
      );
    }
  }

  it("is answered when a key of the affiliate created or deleted the race, else stays not found", async () => {
    const key = await createKey(servers.database.db, "dh-legacy");
    const byKey = "race_bbbbbbbbbbbbbbbbbbbb";
    await history0_3(byKey, [
      [1_790_000_000, "created", "key", key.id],
      [1_790_000_100, "deleted", "cli", "ops"],
    ]);
    expect(await get(`/races/${byKey}/history`, key.secret)).toEqual({
      status: 200,
      json: {
        data: {
          raceId: byKey,
          changes: [
            { at: 1_790_000_000, kind: "created", actor: { kind: "key", id: key.id }, fields: [] },
            { at: 1_790_000_100, kind: "deleted", actor: { kind: "cli", id: "ops" }, fields: [] },
          ],
          standings: NOTHING_COUNTED,
        },
        errors: null,
      },
    });
    const someoneElse = await createKey(servers.database.db, "dh-legacy-other");
    expect(await get(`/races/${byKey}/history`, someoneElse.secret)).toEqual({ status: 404, json: notFound(byKey) });

    const noKey = "race_cccccccccccccccccccc";
    await history0_3(noKey, [
      [1_790_000_000, "created", "admin", ""],
      [1_790_000_100, "deleted", "admin", ""],
    ]);
    expect(await get(`/races/${noKey}/history`, key.secret)).toEqual({ status: 404, json: notFound(noKey) });
  });
});
