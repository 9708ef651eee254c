/**
 * Every time field of every request, over the whole range of int64 seconds (issue 48, item 4), on the real service
 * over a throwaway database: fast-check draws each field from all of int64, from the edges (negative, 0, 2^31,
 * 2^32, 2^53, the 10^11 "milliseconds" line, the end of 2099, int64's ends) and from around now, and sends it over
 * each protocol the field has: REST (the board's POST body and its SSE and overlay query), Connect JSON (the
 * number as a JSON string and as a JSON number) and gRPC (binary). Every answer is 200 or 400 (OK, or
 * InvalidArgument / OutOfRange), never a 5xx nor Internal. The fields: the board's and the watched board's
 * startTimestamp and endTimestamp; a race's start, end and reviewSeconds (CreateRace, UpdateRace, as history with
 * allowPast) and ListRaces' page token (it carries a start); a wager's placedAt; a key's expiresAt, its rate
 * limit's windowSeconds and RotateApiKey's overlapSeconds; RotateWebhookSecret's overlapSeconds.
 * TIME_FIELD_RUNS (default 40) runs per field and protocol.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../../gen/topwagers/v1/api_keys_pb.js";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { WagerIngestService } from "../../gen/topwagers/v1/wager_ingest_pb.js";
import { WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { sendsBearer } from "../support/calls.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const RUNS = Number(process.env.TIME_FIELD_RUNS ?? 40);
const ADMIN_TOKEN = "time-fields-admin-token-0123456789";
const NOW = BigInt(Math.floor(Date.now() / 1000));
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 2n ** 32n - 1n;

/** Edges every int64 field is tried at. */
const EDGES = [
  INT64_MIN,
  INT64_MIN + 1n,
  -(2n ** 53n),
  -(2n ** 32n),
  -1n,
  0n,
  1n,
  1_733_115_599n,
  1_733_115_600n,
  2n ** 31n - 1n,
  2n ** 31n,
  2n ** 32n - 2_592_002n,
  4_102_444_799n,
  4_102_444_800n,
  UINT32_MAX,
  2n ** 32n,
  2n ** 32n + 1n,
  32_503_680_000n,
  100_000_000_000n,
  100_000_000_001n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  INT64_MAX - 1n,
  INT64_MAX,
];

/**
 * An int64 time: anywhere, at an edge, near now (where most accepted values lie), or where a time passes the
 * columns that store it (INT UNSIGNED: 2^32 - 1) but not yet the "milliseconds" line (10^11).
 */
const int64Time = fc.oneof(
  { arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), weight: 1 },
  { arbitrary: fc.constantFrom(...EDGES), weight: 2 },
  { arbitrary: fc.bigInt({ min: NOW - 2n * 10n ** 8n, max: NOW + 2n * 10n ** 8n }), weight: 2 },
  { arbitrary: fc.bigInt({ min: 2n ** 31n, max: 10n ** 11n + 10n }), weight: 2 },
);
/** A start and an end: each anywhere, or the end a little after the start (where a period is otherwise valid). */
const period = fc.oneof(
  fc.tuple(int64Time, int64Time),
  fc.tuple(int64Time, fc.bigInt({ min: -10n, max: 40_000_000n })).map(([start, length]): [bigint, bigint] => {
    const end = start + length;
    return [start, end > INT64_MAX ? INT64_MAX : end < INT64_MIN ? INT64_MIN : end];
  }),
);

/** A uint32 seconds field as a JSON caller may send it (beyond uint32 too) and as gRPC can (within it). */
const jsonUint32 = fc.oneof(fc.constantFrom(...EDGES), fc.bigInt({ min: 0n, max: 3_000_000n }));
const grpcUint32 = fc.oneof(
  fc.constantFrom(0n, 1n, 2_592_000n, 2_592_001n, 86_400n, 86_401n, 2n ** 31n, UINT32_MAX),
  fc.bigInt({ min: 0n, max: UINT32_MAX }),
);

type Protocol = "connect-json-string" | "connect-json-number" | "grpc";
const PROTOCOLS: readonly Protocol[] = ["connect-json-string", "connect-json-number", "grpc"];

/** What a call answered: an HTTP status, and the Connect/gRPC code (0: OK). */
interface Outcome {
  readonly status: number;
  readonly code: Code | 0;
  readonly text: string;
}

let servers: IngestServers;
let secret = "";
let publishable = "";
let endpointId = "";
let keyToRotate = "";
const sessions: Http2SessionManager[] = [];
let serial = 0;

beforeAll(async () => {
  servers = await startIngestServers("time_fields", {
    INGEST_TOKEN: TEST_INGEST_TOKEN,
    ADMIN_TOKEN,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    RACES_PER_AFFILIATE: "100000",
    WEBHOOK_MANUAL_SENDS_PER_MINUTE: "100000",
    STREAM_LIMIT_PER_ADDRESS: "10000000",
    PUBLISHABLE_RATE_LIMIT_POINTS: "1000000",
  });
  secret = (await createKey(servers.database.db, "aff-times")).secret;
  publishable = (
    await createKey(servers.database.db, "aff-times", null, {
      publishable: true,
      allowedOrigins: ["https://a.example"],
    })
  ).secret;
  await servers.client("grpc").upsertUsers({ users: [{ id: "u-times", affiliateId: "aff-times", username: "t" }] });
  const endpoint = await connectJson(servers.publicUrl, "WebhookService/CreateWebhookEndpoint", secret, {
    url: "http://127.0.0.1:9/times",
    eventTypes: ["webhook.test"],
  });
  endpointId = (JSON.parse(endpoint.text) as { endpoint: { id: string } }).endpoint.id;
  keyToRotate = (await createKey(servers.database.db, "aff-times-rotated")).id;
}, 60_000);

afterAll(async () => {
  for (const session of sessions) session.abort();
  await servers?.close();
});

/** A Connect JSON POST of `body` (its int64 values written by `json`), with a bearer token. */
async function connectJson(baseUrl: string, procedure: string, token: string, body: unknown): Promise<Outcome> {
  const response = await fetch(`${baseUrl}/topwagers.v1.${procedure}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const code = response.status === 200 ? 0 : codeOf(text);
  return { status: response.status, code, text };
}

function codeOf(text: string): Code {
  try {
    const name = (JSON.parse(text) as { code?: string }).code ?? "unknown";
    const key = name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()).replace(/^./, (c) => c.toUpperCase());
    return (Code as unknown as Record<string, Code>)[key] ?? Code.Unknown;
  } catch {
    return Code.Unknown;
  }
}

/** JSON text of an object whose `times` are written as JSON strings or as bare JSON numbers (any digits). */
function jsonWith(shape: Record<string, unknown>, protocol: Protocol): string {
  return JSON.stringify(shape, (_key, value: unknown) => (typeof value === "bigint" ? `@@${value}@@` : value)).replace(
    /"@@(-?\d+)@@"/g,
    (_m, digits: string) => (protocol === "connect-json-number" ? digits : `"${digits}"`),
  );
}

function grpc<S extends Parameters<typeof createClient>[0]>(service: S, baseUrl: string, token: string) {
  const sessionManager = new Http2SessionManager(baseUrl);
  sessions.push(sessionManager);
  return createClient(service, createGrpcTransport({ baseUrl, interceptors: [sendsBearer(token)], sessionManager }));
}

async function grpcOutcome(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    await call();
    return { status: 200, code: 0, text: "" };
  } catch (error) {
    const e = ConnectError.from(error);
    return { status: 0, code: e.code, text: e.rawMessage };
  }
}

/** 200 or 400, OK or InvalidArgument / OutOfRange: anything else fails, naming the call. */
function expectClean(what: string, outcome: Outcome): void {
  const clean =
    (outcome.code === 0 || outcome.code === Code.InvalidArgument || outcome.code === Code.OutOfRange) &&
    (outcome.status === 0 || outcome.status === 200 || outcome.status === 400);
  expect(clean, `${what} answered ${outcome.status} ${Code[outcome.code] ?? outcome.code}: ${outcome.text}`).toBe(true);
}

/** A name not used before in this file (slugs, wager ids). */
function fresh(prefix: string): string {
  serial += 1;
  return `${prefix}-${serial}`;
}
const slug = () => fresh("t");

/** One property per field and protocol: `send` makes the call for the drawn values. */
function property<T extends unknown[]>(
  name: string,
  arbitraries: { [K in keyof T]: fc.Arbitrary<T[K]> },
  send: (...values: T) => Promise<Outcome>,
): Promise<void> {
  return fc.assert(
    fc.asyncProperty(...(arbitraries as unknown as [fc.Arbitrary<unknown>]), async (...values: unknown[]) => {
      expectClean(`${name} ${values.map(String).join(" ")}`, await send(...(values as T)));
    }),
    { numRuns: RUNS },
  );
}

describe("every time field, over int64, answers 200 or 400", () => {
  it("the board: startTimestamp and endTimestamp (REST body, SSE and overlay query, Connect, gRPC)", async () => {
    const rest = (start: bigint, end: bigint) =>
      fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: `{"startTimestamp":${start},"endTimestamp":${end},"numUsers":5}`,
      });
    await property("REST board", [period], async ([start, end]) => {
      const response = await rest(start, end);
      const text = await response.text();
      return { status: response.status, code: response.status === 200 ? 0 : Code.InvalidArgument, text };
    });
    for (const path of ["top-affiliate-wagers-by-period/stream", "board"]) {
      await property(`GET /${path}`, [period], async ([start, end]) => {
        const abort = new AbortController();
        const response = await fetch(
          `${servers.publicUrl}/${path}?key=${publishable}&startTimestamp=${start}&endTimestamp=${end}&numUsers=5`,
          { headers: { origin: "https://a.example" }, signal: abort.signal },
        );
        const text = response.status === 200 ? path : await response.text();
        abort.abort();
        return { status: response.status, code: response.status === 200 ? 0 : Code.InvalidArgument, text };
      });
    }
    for (const protocol of PROTOCOLS) {
      await property(`GetTopAffiliateWagersByPeriod ${protocol}`, [period], async ([start, end]) => {
        if (protocol === "grpc") {
          return grpcOutcome(() =>
            grpc(TopWagersService, servers.publicUrl, secret).getTopAffiliateWagersByPeriod({
              startTimestamp: start,
              endTimestamp: end,
              numUsers: 5,
            }),
          );
        }
        const body = jsonWith({ startTimestamp: start, endTimestamp: end, numUsers: 5 }, protocol);
        return connectJson(servers.publicUrl, "TopWagersService/GetTopAffiliateWagersByPeriod", secret, body);
      });
    }
    await property("WatchTopAffiliateWagersByPeriod grpc", [period], async ([start, end]) => {
      const abort = new AbortController();
      const client = grpc(TopWagersService, servers.publicUrl, secret);
      return grpcOutcome(async () => {
        const stream = client.watchTopAffiliateWagersByPeriod(
          { startTimestamp: start, endTimestamp: end, numUsers: 5 },
          { signal: abort.signal },
        );
        for await (const _first of stream) break;
        abort.abort();
      });
    });
  }, 300_000);

  it("a race: start, end and reviewSeconds when created, updated and made as history; a list's page token", async () => {
    for (const protocol of PROTOCOLS) {
      const uint32 = protocol === "grpc" ? grpcUint32 : jsonUint32;
      await property(
        `CreateRace ${protocol}`,
        [int64Time, int64Time, uint32, fc.boolean()],
        (start, end, review, past) => {
          const rules = { slug: slug(), title: "T", startTimestamp: start, endTimestamp: end, reviewSeconds: review };
          if (protocol === "grpc") {
            return grpcOutcome(() =>
              grpc(RaceService, servers.publicUrl, secret).createRace({
                rules: { ...rules, reviewSeconds: Number(review) },
                allowPast: past,
              }),
            );
          }
          return connectJson(
            servers.publicUrl,
            "RaceService/CreateRace",
            secret,
            jsonWith({ rules, allowPast: past }, protocol),
          );
        },
      );
      await property(`UpdateRace ${protocol}`, [period, uint32], async ([start, end], review) => {
        const made = await grpc(RaceService, servers.publicUrl, secret).createRace({
          rules: { slug: slug(), title: "T", startTimestamp: NOW + 86_400n, endTimestamp: NOW + 2n * 86_400n },
        });
        const id = made.race?.id ?? "";
        if (protocol === "grpc") {
          return grpcOutcome(() =>
            grpc(RaceService, servers.publicUrl, secret).updateRace({
              id,
              startTimestamp: start,
              endTimestamp: end,
              reviewSeconds: Number(review),
            }),
          );
        }
        const body = jsonWith({ id, startTimestamp: start, endTimestamp: end, reviewSeconds: review }, protocol);
        return connectJson(servers.publicUrl, "RaceService/UpdateRace", secret, body);
      });
      await property(`ListRaces page token ${protocol}`, [int64Time], (start) => {
        const pageToken = Buffer.from(`[${start},"race_aaaaaaaaaaaaaaaaaaaa"]`, "utf8").toString("base64url");
        if (protocol === "grpc") {
          return grpcOutcome(() => grpc(RaceService, servers.publicUrl, secret).listRaces({ pageToken }));
        }
        return connectJson(servers.publicUrl, "RaceService/ListRaces", secret, { pageToken });
      });
    }
  }, 600_000);

  it("a wager's placedAt, a key's expiresAt, windowSeconds and overlapSeconds, a webhook's overlapSeconds", async () => {
    for (const protocol of PROTOCOLS) {
      const uint32 = protocol === "grpc" ? grpcUint32 : jsonUint32;
      await property(`RecordWagers ${protocol}`, [int64Time], (placedAt) => {
        const wager = { id: fresh("w"), userId: "u-times", amount: "1.5", placedAt };
        if (protocol === "grpc") {
          return grpcOutcome(() =>
            grpc(WagerIngestService, servers.internalUrl, TEST_INGEST_TOKEN).recordWagers({ wagers: [wager] }),
          );
        }
        const body = jsonWith({ wagers: [wager] }, protocol);
        return connectJson(servers.internalUrl, "WagerIngestService/RecordWagers", TEST_INGEST_TOKEN, body);
      });
      await property(`CreateApiKey ${protocol}`, [int64Time, uint32], (expiresAt, windowSeconds) => {
        const request = {
          affiliateId: "aff-times-keys",
          label: "t",
          expiresAt,
          rateLimit: { points: 10, windowSeconds },
        };
        if (protocol === "grpc") {
          return grpcOutcome(() =>
            grpc(ApiKeyService, servers.internalUrl, ADMIN_TOKEN).createApiKey({
              ...request,
              rateLimit: { points: 10, windowSeconds: Number(windowSeconds) },
            }),
          );
        }
        return connectJson(servers.internalUrl, "ApiKeyService/CreateApiKey", ADMIN_TOKEN, jsonWith(request, protocol));
      });
      await property(`RotateApiKey ${protocol}`, [uint32], async (overlapSeconds) => {
        const outcome =
          protocol === "grpc"
            ? await grpcOutcome(async () => {
                const rotated = await grpc(ApiKeyService, servers.internalUrl, ADMIN_TOKEN).rotateApiKey({
                  id: keyToRotate,
                  overlapSeconds: Number(overlapSeconds),
                });
                keyToRotate = rotated.apiKey?.id ?? keyToRotate;
              })
            : await connectJson(
                servers.internalUrl,
                "ApiKeyService/RotateApiKey",
                ADMIN_TOKEN,
                jsonWith({ id: keyToRotate, overlapSeconds }, protocol),
              );
        if (protocol !== "grpc" && outcome.status === 200) {
          keyToRotate = (JSON.parse(outcome.text) as { apiKey: { id: string } }).apiKey.id;
        }
        return outcome;
      });
      await property(`RotateWebhookSecret ${protocol}`, [uint32], (overlapSeconds) => {
        if (protocol === "grpc") {
          return grpcOutcome(() =>
            grpc(WebhookService, servers.publicUrl, secret).rotateWebhookSecret({
              id: endpointId,
              overlapSeconds: Number(overlapSeconds),
            }),
          );
        }
        const body = jsonWith({ id: endpointId, overlapSeconds }, protocol);
        return connectJson(servers.publicUrl, "WebhookService/RotateWebhookSecret", secret, body);
      });
    }
  }, 600_000);
});
