/**
 * Findings of the races review (notes/issue-29-review.md), each on real sockets over MariaDB: reads on the
 * internal listener never create the affiliate they name; a browser's CORS preflight of a race stream (a
 * fetch-based EventSource sending Authorization and Last-Event-ID) is answered for a publishable key's origin;
 * a publishable key (public, in a browser) never reads the excluded user ids (staff accounts) over RPC.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { bearerConnect, refusal, sendsBearer } from "../support/calls.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const ADMIN_TOKEN = "test-admin-token-races-review-0123";
const NOW = Math.floor(Date.now() / 1000);

let servers: IngestServers;
const sessions: Http2SessionManager[] = [];

function adminJson() {
  return createClient(RaceService, bearerConnect(servers.internalUrl, ADMIN_TOKEN));
}

function adminGrpc() {
  const sessionManager = new Http2SessionManager(servers.internalUrl);
  sessions.push(sessionManager);
  return createClient(
    RaceService,
    createGrpcTransport({ baseUrl: servers.internalUrl, interceptors: [sendsBearer(ADMIN_TOKEN)], sessionManager }),
  );
}

async function affiliateRows(externalId: string): Promise<number> {
  const [rows] = await servers.database.db.write.query<RowDataPacket[]>(
    "SELECT COUNT(*) AS n FROM affiliates WHERE external_id = ?",
    [externalId],
  );
  return Number(rows[0]?.n);
}

beforeAll(async () => {
  servers = await startIngestServers("races_review", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
});

afterAll(async () => {
  for (const manager of sessions) manager.abort();
  await servers?.close();
});

describe("the internal listener names an affiliate", () => {
  it("reads, changes and watches of an unknown affiliate find nothing and write nothing; CreateRace creates it", async () => {
    const admin = adminJson();
    const typo = "rr-typo-affiliate";
    expect(await affiliateRows(typo)).toBe(0);

    expect(await admin.listRaces({ affiliateId: typo })).toMatchObject({ races: [], nextPageToken: "" });
    const get = await refusal(admin.getRace({ affiliateId: typo, idOrSlug: "monthly" }));
    expect([get.code, get.rawMessage, get.findDetails(ErrorInfoSchema)[0]?.reason]).toEqual([
      Code.NotFound,
      'this affiliate has no race "monthly"',
      "RACE_NOT_FOUND",
    ]);
    const update = await refusal(admin.updateRace({ affiliateId: typo, id: "race_00000000000000000000", title: "x" }));
    expect([update.code, update.rawMessage]).toEqual([
      Code.NotFound,
      'this affiliate has no race "race_00000000000000000000"',
    ]);
    const cancel = await refusal(admin.cancelRace({ affiliateId: typo, id: "race_00000000000000000000" }));
    expect(cancel.code).toBe(Code.NotFound);
    const watch = await refusal(
      (async () => {
        for await (const _ of adminGrpc().watchRace({ affiliateId: typo, idOrSlug: "monthly" })) break;
      })(),
    );
    expect([watch.code, watch.rawMessage]).toEqual([Code.NotFound, 'this affiliate has no race "monthly"']);
    expect(await affiliateRows(typo)).toBe(0);

    const created = await admin.createRace({
      affiliateId: typo,
      rules: {
        slug: "monthly",
        title: "Monthly",
        startTimestamp: BigInt(NOW + 3_600),
        endTimestamp: BigInt(NOW + 7_200),
      },
    });
    expect(created.race?.affiliateId).toBe(typo);
    expect(await affiliateRows(typo)).toBe(1);
    expect((await admin.getRace({ affiliateId: typo, idOrSlug: "monthly" })).race?.id).toBe(created.race?.id);
  });
});

describe("the race stream's CORS preflight", () => {
  it("allows Authorization and Last-Event-ID from a publishable key's origin, and refuses another origin", async () => {
    const origin = "https://stream-page.example.com";
    await createKey(servers.database.db, "rr-cors", null, { publishable: true, allowedOrigins: [origin] });
    const preflight = await fetch(`${servers.publicUrl}/races/monthly/stream`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization,last-event-id",
      },
    });
    expect([
      preflight.status,
      preflight.headers.get("access-control-allow-origin"),
      preflight.headers.get("access-control-allow-methods"),
      preflight.headers.get("access-control-allow-headers"),
    ]).toEqual([204, origin, "GET, POST, OPTIONS", "Authorization, Content-Type, Last-Event-ID"]);
    const refused = await fetch(`${servers.publicUrl}/races/monthly/stream`, {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET" },
    });
    expect([refused.status, refused.headers.get("access-control-allow-origin")]).toEqual([403, null]);
  });
});

describe("a publishable key reading races over RPC", () => {
  it("gets no excluded user ids (the affiliate's staff accounts) from GetRace, ListRaces nor WatchRace", async () => {
    const secret = (await createKey(servers.database.db, "rr-hidden")).secret;
    const publishable = (
      await createKey(servers.database.db, "rr-hidden", null, {
        publishable: true,
        allowedOrigins: ["https://hidden.example.com"],
      })
    ).secret;
    const client = (key: string) => createClient(RaceService, bearerConnect(servers.publicUrl, key));
    const created = await client(secret).createRace({
      rules: {
        slug: "hidden",
        title: "Hidden staff",
        startTimestamp: BigInt(NOW - 60),
        endTimestamp: BigInt(NOW + 3_600),
        excludedUserIds: ["staff-1", "streamer-alt"],
      },
    });
    expect(created.race?.rules?.excludedUserIds).toEqual(["staff-1", "streamer-alt"]);
    expect((await client(secret).getRace({ idOrSlug: "hidden" })).race?.rules?.excludedUserIds).toEqual([
      "staff-1",
      "streamer-alt",
    ]);
    const reader = client(publishable);
    const got = await reader.getRace({ idOrSlug: "hidden" });
    expect([got.race?.id, got.race?.rules?.excludedUserIds]).toEqual([created.race?.id, []]);
    const listed = await reader.listRaces({});
    expect(listed.races.map((race) => [race.id, race.rules?.excludedUserIds])).toEqual([[created.race?.id, []]]);
    for await (const message of reader.watchRace({ idOrSlug: "hidden" })) {
      expect([message.race?.race?.id, message.race?.race?.rules?.excludedUserIds]).toEqual([created.race?.id, []]);
      break;
    }
  });
});

describe("a race key's rate limit over RPC", () => {
  it("counts GetRace, ListRaces and WatchRace alike: past the key's points each is resource_exhausted", async () => {
    const key = (await createKey(servers.database.db, "rr-limited", { points: 3, windowSeconds: 60 })).secret;
    const client = createClient(RaceService, bearerConnect(servers.publicUrl, key));
    expect((await client.listRaces({})).races).toEqual([]);
    expect((await refusal(client.getRace({ idOrSlug: "none" }))).code).toBe(Code.NotFound);
    const watched = await refusal(
      (async () => {
        for await (const _ of client.watchRace({ idOrSlug: "none" })) break;
      })(),
    );
    expect(watched.code).toBe(Code.NotFound);
    const limited = await Promise.all([
      refusal(client.listRaces({})),
      refusal(client.getRace({ idOrSlug: "none" })),
      refusal(
        (async () => {
          for await (const _ of client.watchRace({ idOrSlug: "none" })) break;
        })(),
      ),
    ]);
    expect(limited.map((error) => error.code)).toEqual([
      Code.ResourceExhausted,
      Code.ResourceExhausted,
      Code.ResourceExhausted,
    ]);
  });
});

describe("REST totals past a double's precision", () => {
  it("writes totalWagered with every digit, the same digits as totalWageredDecimal", async () => {
    const key = (await createKey(servers.database.db, "rr-huge")).secret;
    await addBoard(servers.database.db, "rr-huge", [
      [
        "u-whale",
        "whale",
        "",
        ["999999999.12345678", NOW - 30],
        ["999999999.12345678", NOW - 20],
        ["999999999.12345678", NOW - 10],
      ],
    ]);
    const headers = { authorization: `Bearer ${key}` };
    const created = await fetch(`${servers.publicUrl}/topwagers.v1.RaceService/CreateRace`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({
        rules: { slug: "whales", title: "Whales", startTimestamp: NOW - 60, endTimestamp: NOW + 3_600, prizes: ["1"] },
      }),
    });
    expect(created.status).toBe(200);
    const body = await (await fetch(`${servers.publicUrl}/races/whales`, { headers })).text();
    expect(body).toContain(
      '"rank":1,"username":"whale","avatar":"' +
        `${DEFAULT_AVATAR_URL}","totalWagered":2999999997.37037034,"totalWageredDecimal":"2999999997.37037034","prize":"1"}`,
    );
  });
});
