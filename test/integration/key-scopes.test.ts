/**
 * Scopes on keys, over real sockets: a key restricted to scopes without boards:read is refused
 * 403 / permission_denied naming boards:read on every board path (REST POST, Connect and gRPC
 * unary through connect-es, the watch stream, SSE, the /board overlay), with ErrorInfo reason
 * MISSING_SCOPE and metadata scope; a key with boards:read reads; scopes are listed for a
 * restricted key only, kept by rotation; a publishable key never gets a write scope and an unknown
 * scope is invalid_argument naming the field.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { addBoard } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { connectEsWatch } from "../support/live.js";
import { restTop } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-scopes-0123456789";
/** January 2025. */
const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 };
const ORIGIN = "https://board.example.com";
const LACKS_BOARDS = "this API key lacks the scope boards:read";

let servers: IngestServers;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  servers = await startIngestServers("key_scopes", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
  await addBoard(servers.database.db, "aff-s", [["s-1", "scoped one", "", ["12.5", JAN.startTimestamp + 60]]]);
});

afterAll(async () => {
  for (const session of sessions) session.abort();
  await servers?.close();
});

function admin() {
  return servers.adminClient(ADMIN_TOKEN);
}

async function restBoard(key: string): Promise<[number, string]> {
  const reply = await restTop(servers.publicUrl, key, JAN);
  return [reply.status, reply.text];
}

async function get(path: string, key?: string): Promise<[number, string]> {
  const response = await fetch(`${servers.publicUrl}${path}`, {
    headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
  });
  const text = await response.text();
  return [response.status, text];
}

function transports(): [string, Transport][] {
  const h2 = new Http2SessionManager(servers.publicUrl);
  sessions.push(h2);
  return [
    ["Connect JSON", createConnectTransport({ baseUrl: servers.publicUrl, httpVersion: "1.1" })],
    ["gRPC", createGrpcTransport({ baseUrl: servers.publicUrl, sessionManager: h2 })],
  ];
}

async function unary(transport: Transport, key: string): Promise<ConnectError | string[]> {
  try {
    const answer = await createClient(TopWagersService, transport).getTopAffiliateWagersByPeriod(
      { startTimestamp: BigInt(JAN.startTimestamp), endTimestamp: BigInt(JAN.endTimestamp), numUsers: 10 },
      { headers: { authorization: `Bearer ${key}` } },
    );
    return answer.data.map((e) => `${e.userId} ${e.totalWageredDecimal}`);
  } catch (error) {
    return ConnectError.from(error);
  }
}

describe("a key without boards:read", () => {
  let secret: string;
  let publishable: string;

  beforeAll(async () => {
    secret = (await admin().createApiKey({ affiliateId: "aff-s", label: "races only", scopes: ["races:read"] })).secret;
    publishable = (
      await admin().createApiKey({
        affiliateId: "aff-s",
        publishable: true,
        allowedOrigins: [ORIGIN],
        scopes: ["races:read"],
      })
    ).secret;
  });

  it("is refused 403 / permission_denied naming the scope over REST", async () => {
    expect(await restBoard(secret)).toEqual([
      403,
      `{"data":null,"errors":[{"code":"permission_denied","message":"${LACKS_BOARDS}"}]}`,
    ]);
  });

  it("is refused permission_denied with ErrorInfo MISSING_SCOPE {scope} over Connect and gRPC (connect-es)", async () => {
    for (const [name, transport] of transports()) {
      const error = await unary(transport, secret);
      expect(error, name).toBeInstanceOf(ConnectError);
      const refused = error as ConnectError;
      expect([name, refused.code, refused.rawMessage]).toEqual([name, Code.PermissionDenied, LACKS_BOARDS]);
      expect(refused.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain, { ...i.metadata }])).toEqual([
        ["MISSING_SCOPE", "topwagers", { scope: "boards:read" }],
      ]);
    }
  });

  it("is refused on the watch stream (connect-es) before any board", async () => {
    for (const [name, transport] of transports()) {
      const stream = connectEsWatch(name, transport, secret, JAN);
      const { error } = await stream.collected.ending();
      expect([name, error?.code, error?.message, stream.collected.boards.length]).toEqual([
        name,
        Code.PermissionDenied,
        LACKS_BOARDS,
        0,
      ]);
      stream.close();
    }
  });

  it("is refused on the SSE stream and the /board overlay", async () => {
    const query = `startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10`;
    const body = `{"data":null,"errors":[{"code":"permission_denied","message":"${LACKS_BOARDS}"}]}`;
    expect(await get(`/top-affiliate-wagers-by-period/stream?${query}`, secret)).toEqual([403, body]);
    expect(await get(`/top-affiliate-wagers-by-period/stream?${query}&key=${publishable}`)).toEqual([403, body]);
    const [status, page] = await get(`/board?${query}&key=${publishable}`);
    expect(status).toBe(403);
    expect(page).toContain(LACKS_BOARDS);
  });
});

describe("a key with boards:read", () => {
  it("reads over REST, Connect, gRPC, SSE and the overlay", async () => {
    const { secret } = await admin().createApiKey({ affiliateId: "aff-s", scopes: ["boards:read"] });
    const publishable = (
      await admin().createApiKey({
        affiliateId: "aff-s",
        publishable: true,
        allowedOrigins: [ORIGIN],
        scopes: ["boards:read"],
      })
    ).secret;
    expect(await restBoard(secret)).toEqual([
      200,
      '{"data":[{"username":"scoped one","avatar":"' +
        `${servers.config.defaultAvatarUrl}","totalWagered":12.5}],"errors":null}`,
    ]);
    for (const [name, transport] of transports()) {
      expect([name, await unary(transport, secret)]).toEqual([name, ["s-1 12.5"]]);
    }
    const query = `startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10`;
    const controller = new AbortController();
    const sse = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period/stream?${query}&key=${publishable}`, {
      signal: controller.signal,
    });
    expect(sse.status).toBe(200);
    controller.abort();
    expect((await get(`/board?${query}&key=${publishable}`))[0]).toBe(200);
  });
});

describe("the overlay", () => {
  it("needs boards:read for a board and races:read for a race, as their streams do", async () => {
    const issue = async (scopes: string[]) =>
      (await admin().createApiKey({ affiliateId: "aff-s", publishable: true, allowedOrigins: [ORIGIN], scopes }))
        .secret;
    const [boardsOnly, racesOnly] = [await issue(["boards:read"]), await issue(["races:read"])];
    const racePage = (key: string) => get(`/board?race=monthly&key=${key}`);
    expect((await racePage(racesOnly))[0]).toBe(200);
    const [status, page] = await racePage(boardsOnly);
    expect(status).toBe(403);
    expect(page).toContain("this API key lacks the scope races:read");
    const query = `startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10`;
    expect((await get(`/board?${query}&key=${boardsOnly}`))[0]).toBe(200);
  });
});

describe("issuing scoped keys", () => {
  it("lists the scopes of a restricted key only, in catalogue order, each once; rotation keeps them", async () => {
    const restricted = await admin().createApiKey({
      affiliateId: "aff-list",
      scopes: ["races:write", "boards:read", "races:write"],
    });
    const whole = await admin().createApiKey({ affiliateId: "aff-list" });
    const everyOne = await admin().createApiKey({
      affiliateId: "aff-list",
      scopes: ["webhooks:write", "races:write", "races:read", "boards:read"],
    });
    const readOnly = await admin().createApiKey({
      affiliateId: "aff-list",
      publishable: true,
      allowedOrigins: [ORIGIN],
      scopes: ["races:read", "boards:read"],
    });
    expect(restricted.apiKey?.scopes).toEqual(["boards:read", "races:write"]);
    const listed = (await admin().listApiKeys({ affiliateId: "aff-list" })).apiKeys;
    // Keys made in the same second list by id: compared by id here.
    expect(new Map(listed.map((k) => [k.id, k.scopes]))).toEqual(
      new Map([
        [restricted.apiKey?.id, ["boards:read", "races:write"]],
        [whole.apiKey?.id, []],
        [everyOne.apiKey?.id, []],
        [readOnly.apiKey?.id, []],
      ]),
    );
    const rotated = await admin().rotateApiKey({ id: restricted.apiKey?.id ?? "", overlapSeconds: 60 });
    expect(rotated.apiKey?.scopes).toEqual(["boards:read", "races:write"]);
    const racesOnly = await admin().createApiKey({ affiliateId: "aff-s", scopes: ["races:read"] });
    const rotatedRacesOnly = await admin().rotateApiKey({ id: racesOnly.apiKey?.id ?? "", overlapSeconds: 0 });
    expect((await restBoard(rotatedRacesOnly.secret))[0]).toBe(403);
    expect((await restBoard(rotated.secret))[0]).toBe(200);
  });

  it("refuses a write scope for a publishable key, and an unknown scope, naming the field", async () => {
    const cases: [Parameters<ReturnType<typeof admin>["createApiKey"]>[0], [string, string][]][] = [
      [
        { affiliateId: "aff-s", publishable: true, allowedOrigins: [ORIGIN], scopes: ["boards:read", "races:write"] },
        [
          [
            "scopes[1]",
            "scopes[1] a publishable key is read-only and cannot have the scope races:write (it may have boards:read, races:read)",
          ],
        ],
      ],
      [
        { affiliateId: "aff-s", publishable: true, allowedOrigins: [ORIGIN], scopes: ["webhooks:write"] },
        [
          [
            "scopes[0]",
            "scopes[0] a publishable key is read-only and cannot have the scope webhooks:write (it may have boards:read, races:read)",
          ],
        ],
      ],
      [
        { affiliateId: "aff-s", scopes: ["boards:write", "races:read", "BOARDS:READ"] },
        [
          [
            "scopes[0]",
            'scopes[0] "boards:write" is not a scope; the scopes are boards:read, races:read, races:write, webhooks:write',
          ],
          [
            "scopes[2]",
            'scopes[2] "BOARDS:READ" is not a scope; the scopes are boards:read, races:read, races:write, webhooks:write',
          ],
        ],
      ],
    ];
    for (const [request, expected] of cases) {
      const error = await admin()
        .createApiKey(request)
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code).toBe(Code.InvalidArgument);
      expect(error?.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual(
        expected,
      );
      expect(error?.rawMessage).toBe(expected.map(([, message]) => message).join(". "));
    }
    // Nothing was created for aff-s beyond the keys of the other cases.
    const keys = (await admin().listApiKeys({ affiliateId: "aff-s" })).apiKeys;
    expect(keys.some((k) => k.scopes.some((s) => s.endsWith(":write")) && k.publishable)).toBe(false);
  });
});
