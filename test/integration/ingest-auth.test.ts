/**
 * Who may ingest: only a caller with the INGEST_TOKEN, on the internal
 * listener. No token configured, a wrong token, no token and an affiliate API
 * key are all refused on every protocol, and nothing is written. The public
 * port does not serve ingest at all.
 */
import { Code } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { refusal } from "../support/calls.js";
import { connectDetails, errorInfo } from "../support/details.js";
import { createKey } from "../support/fixtures.js";
import { INGEST_PROTOCOLS, type IngestServers, TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";

const RESERVED = /[:;,/?@&=+$#]/;
const USER = { id: "u-1", affiliateId: "aff-1", username: "alice", avatar: "" };
const PLACED_AT = BigInt(Math.floor(Date.now() / 1000) - 60);

async function rowCounts(servers: IngestServers): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ["users", "wagers", "wager_hourly", "wager_daily", "wager_halfmonthly", "wager_monthly"]) {
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${table}`);
    counts[table] = Number(rows[0]?.n);
  }
  return counts;
}

const EMPTY = { users: 0, wagers: 0, wager_hourly: 0, wager_daily: 0, wager_halfmonthly: 0, wager_monthly: 0 };

describe("ingest with no INGEST_TOKEN configured", () => {
  const servers = useIngestServers("ingest_auth_off", {});

  it.each(INGEST_PROTOCOLS)("refuses every call over %s with how to enable ingest", async (protocol) => {
    for (const token of [TEST_INGEST_TOKEN, "", null]) {
      const client = servers.client(protocol, token);
      const upsert = await refusal(client.upsertUsers({ users: [USER] }));
      expect(upsert.code).toBe(Code.FailedPrecondition);
      expect(upsert.rawMessage).toBe(
        "ingest is disabled on this server. Set the INGEST_TOKEN environment variable (16 or more characters) " +
          "and restart the service to enable it",
      );
      const record = await refusal(
        client.recordWagers({ wagers: [{ id: "w-1", userId: "u-1", amount: "1", placedAt: PLACED_AT }] }),
      );
      expect(record.code).toBe(Code.FailedPrecondition);
    }
    expect(servers.internal.ingestEnabled).toBe(false);
    expect(await rowCounts(servers)).toEqual(EMPTY);
  });
});

describe("ingest with INGEST_TOKEN", () => {
  const servers = useIngestServers("ingest_auth_on");
  let apiKey: string;
  beforeAll(async () => {
    apiKey = (await createKey(servers.database.db, "aff-1")).secret;
  });
  it.each(INGEST_PROTOCOLS)("refuses a wrong, missing or affiliate credential over %s", async (protocol) => {
    const cases: [string | null, string][] = [
      [
        "wrong-token-0123456789abcdef",
        "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN",
      ],
      [`${TEST_INGEST_TOKEN}x`, "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN"],
      [
        TEST_INGEST_TOKEN.slice(0, -1),
        "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN",
      ],
      [null, "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN"],
      [
        apiKey,
        "affiliate API keys are not accepted by the ingest service. Send Authorization Bearer with the INGEST_TOKEN",
      ],
    ];
    for (const [token, message] of cases) {
      const client = servers.client(protocol, token);
      const error = await refusal(client.upsertUsers({ users: [USER] }));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toBe(message);
      expect(error.metadata.get("www-authenticate")).toBe('Bearer realm="topwagers-ingest"');
      expect(error.rawMessage).not.toMatch(RESERVED);
      const record = await refusal(
        client.recordWagers({ wagers: [{ id: "w-1", userId: "u-1", amount: "1", placedAt: PLACED_AT }] }),
      );
      expect(record.code).toBe(Code.Unauthenticated);
    }
    expect(await rowCounts(servers)).toEqual(EMPTY);
  });

  it("refuses before reading the body: a bad token with a malformed body is unauthenticated", async () => {
    const response = await fetch(`${servers.internalUrl}/topwagers.v1.WagerIngestService/UpsertUsers`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer nope-nope-nope-nope" },
      body: "{not json",
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      code: "unauthenticated",
      message: "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN",
      details: connectDetails(errorInfo("BAD_SERVICE_TOKEN")),
    });
  });

  it.each(INGEST_PROTOCOLS)("accepts the token over %s", async (protocol) => {
    const client = servers.client(protocol);
    expect(await client.upsertUsers({ users: [USER] })).toMatchObject({ upserted: 1 });
  });

  it("accepts a lowercase scheme and spaces around the token", async () => {
    const response = await fetch(`${servers.internalUrl}/topwagers.v1.WagerIngestService/RecordWagers`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `bearer   ${TEST_INGEST_TOKEN}  ` },
      body: JSON.stringify({ wagers: [] }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({});
  });

  it("answers 404 in JSON for other paths on the internal listener", async () => {
    const response = await fetch(`${servers.internalUrl}/top-affiliate-wagers-by-period`, { method: "POST" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      code: "not_found",
      message:
        "no such path. The internal listener serves topwagers.v1.WagerIngestService topwagers.v1.ApiKeyService " +
        "topwagers.v1.RaceService topwagers.v1.WebhookService grpc.health.v1.Health grpc.reflection.v1.ServerReflection grpc.reflection.v1alpha.ServerReflection " +
        "over Connect, gRPC and gRPC-Web",
    });
  });
});

describe("the public port", () => {
  const servers = useIngestServers("ingest_auth_public");

  it("answers 404 for the ingest paths, whatever the credential", async () => {
    for (const method of ["UpsertUsers", "RecordWagers"]) {
      for (const authorization of [`Bearer ${TEST_INGEST_TOKEN}`, undefined]) {
        const response = await fetch(`${servers.publicUrl}/topwagers.v1.WagerIngestService/${method}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(authorization === undefined ? {} : { authorization }),
          },
          body: JSON.stringify({ users: [USER] }),
        });
        expect(response.status).toBe(404);
        const body = (await response.json()) as { errors: { code: string }[] };
        expect(body.errors[0]?.code).toBe("not_found");
      }
    }
    expect(await rowCounts(servers)).toEqual(EMPTY);
  });

  it("is not an ingest service over gRPC either", async () => {
    const client = servers.client("grpc", TEST_INGEST_TOKEN, servers.publicUrl);
    const error = await refusal(client.upsertUsers({ users: [USER] }));
    expect(error.code).toBe(Code.Unimplemented);
    expect(await rowCounts(servers)).toEqual(EMPTY);
  });
});
