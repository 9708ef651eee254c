/**
 * Publishable keys (issue 19 item 3): issued by the ApiKeyService with their
 * allowed origins (checked), or none for an overlay-only key (issue 29), listed with kind and origins; browser-safe on the
 * public port: CORS for their origins only (preflight 204 / 403, actual
 * requests with Access-Control-Allow-Origin and Vary), never for a secret key;
 * counted per key and client address (two viewers behind a trusted proxy each
 * get their own budget); never read from the POST's query string; a secret key
 * in a URL refused with its own message (the admission function the GET paths
 * call).
 *
 * Real sockets, real MariaDB; the client address varies through
 * X-Forwarded-For from 127.0.0.1, which TRUSTED_PROXIES trusts.
 */
import http from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { refusal } from "../support/calls.js";
import { createKey, keysFollowed } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";
import { httpRequest } from "../support/rest.js";

const ADMIN_TOKEN = "test-admin-token-abcdef0123456789";
const BOARD = "https://board.example.com";
const OTHER_SITE = "https://evil.example.net";
const JAN = { startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 };
const PREFLIGHT_HEADERS = {
  "access-control-allow-origin": BOARD,
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Authorization, Content-Type, Last-Event-ID",
  "access-control-max-age": "600",
  vary: "Origin",
};

const servers = useIngestServers("publishable_keys", {
  INGEST_TOKEN: TEST_INGEST_TOKEN,
  ADMIN_TOKEN,
  TRUSTED_PROXIES: "127.0.0.1",
  PUBLISHABLE_RATE_LIMIT_POINTS: "3",
});
let publishable: string;
let publishableId: string;
let secret: string;

function admin() {
  return servers.adminClient(ADMIN_TOKEN);
}

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

async function request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  const port = Number(new URL(servers.publicUrl).port);
  const reply = await httpRequest(port, { method, path, headers, ...(body === undefined ? {} : { body }) });
  return { status: reply.status, headers: reply.headers, text: reply.body.toString("utf8") };
}

function post(key: string | undefined, extra: Record<string, string> = {}, query = ""): Promise<Reply> {
  return request(
    "POST",
    `/top-affiliate-wagers-by-period${query}`,
    {
      "content-type": "application/json",
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
      ...extra,
    },
    JSON.stringify(JAN),
  );
}

function corsHeaders(reply: Reply): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(reply.headers).filter(([name]) => name.startsWith("access-control-")),
  ) as Record<string, string | undefined>;
}

beforeAll(async () => {
  const created = await admin().createApiKey({
    affiliateId: "aff-pub",
    label: "overlay",
    publishable: true,
    allowedOrigins: [BOARD, "http://localhost:5173"],
  });
  publishable = created.secret;
  publishableId = created.apiKey?.id ?? "";
  secret = (await createKey(servers.database.db, "aff-pub")).secret;
});

describe("issuing publishable keys", () => {
  it("counts the keys held in memory by kind on /metrics", async () => {
    const text = await (await fetch(`${servers.internalUrl}/metrics`)).text();
    const lines = text.split("\n").filter((line) => line.startsWith("topwagers_api_keys{"));
    expect(lines.sort()).toEqual(['topwagers_api_keys{kind="publishable"} 1', 'topwagers_api_keys{kind="secret"} 1']);
  });

  it("issues tw_pub_ keys with their origins, and lists kind and origins", async () => {
    expect(publishable).toMatch(/^tw_pub_[0-9A-Za-z]{38}$/);
    const listed = await admin().listApiKeys({ affiliateId: "aff-pub" });
    const mine = listed.apiKeys.find((k) => k.id === publishableId);
    expect([mine?.publishable, mine?.allowedOrigins]).toEqual([true, [BOARD, "http://localhost:5173"]]);
    const secretOne = listed.apiKeys.find((k) => k.id !== publishableId);
    expect([secretOne?.publishable, secretOne?.allowedOrigins]).toEqual([false, []]);
  });

  it("issues an overlay-only key without origins: it reads with ?key=, and no site's page gets CORS for it", async () => {
    const created = await admin().createApiKey({ affiliateId: "aff-pub", label: "obs", publishable: true });
    expect([created.apiKey?.publishable, created.apiKey?.allowedOrigins]).toEqual([true, []]);
    const query = `startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=1`;
    // The overlay's own page and its stream are same-origin: no Origin, no CORS needed.
    const page = await request("GET", `/board?key=${created.secret}&${query}`, {});
    expect(page.status).toBe(200);
    const fromSite = await request("GET", `/board?key=${created.secret}&${query}`, { origin: BOARD });
    expect([fromSite.status, corsHeaders(fromSite)]).toEqual([200, {}]);
    const preflight = await request("OPTIONS", "/top-affiliate-wagers-by-period/stream", {
      origin: "https://obs.example.net",
      "access-control-request-method": "GET",
    });
    expect([preflight.status, corsHeaders(preflight)]).toEqual([403, {}]);
    await admin().revokeApiKey({ id: created.apiKey?.id ?? "" });
  });

  it.each([
    [
      { publishable: true, allowedOrigins: ["https://board.example.com/overlay"] },
      "allowed_origins[0]",
      '"https://board.example.com/overlay" is not an exact origin; write it as https://board.example.com (no path, query, user or default port, host in lower case)',
    ],
    [
      { publishable: true, allowedOrigins: [BOARD, "ftp://files.example.com"] },
      "allowed_origins[1]",
      '"ftp://files.example.com" must use http or https (an origin is scheme, host and optional port, e.g. https://board.example.com)',
    ],
    [
      { publishable: true, allowedOrigins: ["board.example.com"] },
      "allowed_origins[0]",
      '"board.example.com" is not an origin (an origin is scheme, host and optional port, e.g. https://board.example.com)',
    ],
    [
      { publishable: false, allowedOrigins: [BOARD] },
      "allowed_origins",
      "allowedOrigins are only for a publishable key (set publishable)",
    ],
  ])("refuses %j naming the field", async (fields, field, message) => {
    const error = await refusal(admin().createApiKey({ affiliateId: "aff-pub", ...fields }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(message);
    expect(
      error.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => [v.field, v.description])),
    ).toEqual([[field, message]]);
  });
});

describe("CORS", () => {
  it("answers a preflight from an allowed origin with 204 and the CORS headers, on the POST and the stream", async () => {
    for (const path of ["/top-affiliate-wagers-by-period", "/top-affiliate-wagers-by-period/stream"]) {
      const reply = await request("OPTIONS", path, {
        origin: BOARD,
        "access-control-request-method": path.endsWith("stream") ? "GET" : "POST",
        "access-control-request-headers": "authorization, content-type",
      });
      expect(reply.status).toBe(204);
      expect(reply.text).toBe("");
      expect(reply.headers).toMatchObject(PREFLIGHT_HEADERS);
    }
  });

  it("refuses any other preflight with 403 and no CORS headers", async () => {
    for (const headers of [{ origin: OTHER_SITE }, {}, { origin: "https://board.example.com:8443" }]) {
      const reply = await request("OPTIONS", "/top-affiliate-wagers-by-period", {
        ...headers,
        "access-control-request-method": "POST",
      });
      expect(reply.status).toBe(403);
      expect(corsHeaders(reply)).toEqual({});
      expect(JSON.parse(reply.text)).toMatchObject({ data: null, errors: [{ code: "permission_denied" }] });
    }
  });

  it("gives an allowed origin's actual request Access-Control-Allow-Origin and Vary: Origin", async () => {
    const reply = await post(publishable, { origin: BOARD, "x-forwarded-for": "198.51.100.50" });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.text)).toEqual({ data: [], errors: null });
    expect(corsHeaders(reply)).toEqual({
      "access-control-allow-origin": BOARD,
      "access-control-expose-headers": "RateLimit, RateLimit-Policy, Retry-After",
    });
    expect(reply.headers.vary).toBe("Accept-Encoding, Origin");
  });

  it("gives another origin no CORS headers, and a secret key never", async () => {
    const other = await post(publishable, { origin: OTHER_SITE, "x-forwarded-for": "198.51.100.51" });
    expect([other.status, corsHeaders(other), other.headers.vary]).toEqual([200, {}, "Accept-Encoding, Origin"]);
    const secretReply = await post(secret, { origin: BOARD });
    expect([secretReply.status, corsHeaders(secretReply), secretReply.headers.vary]).toEqual([
      200,
      {},
      "Accept-Encoding",
    ]);
  });

  it("stops allowing an origin once its only key is revoked", async () => {
    const created = await admin().createApiKey({
      affiliateId: "aff-pub",
      publishable: true,
      allowedOrigins: ["https://gone.example.org"],
    });
    const preflight = () =>
      request("OPTIONS", "/top-affiliate-wagers-by-period", {
        origin: "https://gone.example.org",
        "access-control-request-method": "POST",
      });
    expect((await preflight()).status).toBe(204);
    await admin().revokeApiKey({ id: created.apiKey?.id ?? "" });
    expect((await preflight()).status).toBe(403);
  });
});

describe("the rate limit of a publishable key", () => {
  it("counts per key and client address: each viewer has its own budget", async () => {
    const viewerA = { origin: BOARD, "x-forwarded-for": "198.51.100.1" };
    const viewerB = { origin: BOARD, "x-forwarded-for": "198.51.100.2" };
    for (let i = 0; i < 3; i++) {
      const reply = await post(publishable, viewerA);
      expect(reply.status).toBe(200);
      expect(reply.headers["ratelimit-policy"]).toBe('"publishable";q=3;w=60');
      expect(reply.headers.ratelimit).toMatch(new RegExp(`^"publishable";r=${2 - i};t=\\d+$`));
    }
    const limited = await post(publishable, viewerA);
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toMatch(/^\d+$/);
    // The page can read its own 429.
    expect(corsHeaders(limited)["access-control-allow-origin"]).toBe(BOARD);
    expect(JSON.parse(limited.text)).toEqual({
      data: null,
      errors: [
        {
          code: "resource_exhausted",
          message: expect.stringMatching(
            /^rate limit exceeded for this API key from this address \(3 requests per 60 s\)\. Retry in \d+ s$/,
          ),
        },
      ],
    });
    // Another viewer of the same key is untouched.
    const other = await post(publishable, viewerB);
    expect(other.status).toBe(200);
    expect(other.headers.ratelimit).toMatch(/^"publishable";r=2;t=\d+$/);
    // A secret key keeps one count per key, with the service default.
    expect((await post(secret, viewerA)).headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });
});

describe("keys in URLs", () => {
  it("the POST reads no key from its query string", async () => {
    const reply = await post(undefined, {}, `?key=${publishable}`);
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.text)).toEqual({
      data: null,
      errors: [
        { code: "unauthenticated", message: "missing or invalid API key (send Authorization Bearer with your key)" },
      ],
    });
  });

  const SECRET_IN_URL =
    "secret API keys never go in URLs (rotate this one, the URL may have been logged). " +
    "Put a publishable key (tw_pub_…) in the key parameter, or send the secret key in the Authorization header from a server";

  async function admitFromUrl(urlKey: string, authorization?: string) {
    const admission = servers.app.admission;
    try {
      const admitted = await admission.admitRequest({
        authorization,
        urlKey,
        clientAddress: "198.51.100.77",
        origin: BOARD,
      });
      return { caller: admitted.caller.keyId, cors: admitted.headers["access-control-allow-origin"] };
    } catch (error) {
      const e = ConnectError.from(error);
      return { code: e.code, message: e.rawMessage };
    }
  }

  /** Opens the live stream with these headers, reads the status and headers (and the first bytes), then hangs up. */
  function openStream(query: string, headers: Record<string, string>): Promise<Reply> {
    const url = new URL(servers.publicUrl);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: `/top-affiliate-wagers-by-period/stream?startTimestamp=${JAN.startTimestamp}&endTimestamp=${JAN.endTimestamp}&numUsers=10${query}`,
          agent: false,
          headers,
        },
        (response) => {
          const chunks: Buffer[] = [];
          const done = () => {
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              text: Buffer.concat(chunks).toString("utf8"),
            });
            req.destroy();
          };
          response.on("data", (chunk: Buffer) => {
            chunks.push(chunk);
            if (response.statusCode === 200 && Buffer.concat(chunks).includes("event: board")) done();
          });
          response.on("end", done);
        },
      );
      req.on("error", reject);
      req.end();
    });
  }

  it("the live stream takes a publishable key from ?key=, with CORS for its origin", async () => {
    const reply = await openStream(`&key=${publishable}`, { origin: BOARD, "x-forwarded-for": "198.51.100.90" });
    expect(reply.status).toBe(200);
    expect(reply.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(reply.headers["access-control-allow-origin"]).toBe(BOARD);
    expect(reply.text).toContain('data: {"data":[],"errors":null}');
  });

  it("the live stream refuses a secret key in ?key= with 401 and says why", async () => {
    const reply = await openStream(`&key=${secret}`, {});
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.text)).toEqual({
      data: null,
      errors: [{ code: "unauthenticated", message: SECRET_IN_URL }],
    });
  });

  it("admits a publishable key from ?key= on the GET paths", async () => {
    expect(await admitFromUrl(publishable)).toEqual({ caller: publishableId, cors: BOARD });
  });

  it("refuses a secret key in ?key=, valid, unknown or legacy, even next to a good Authorization", async () => {
    for (const key of [secret, generateApiKey().secret, `tw_${"L".repeat(32)}`]) {
      expect(await admitFromUrl(key)).toEqual({ code: Code.Unauthenticated, message: SECRET_IN_URL });
    }
    expect(await admitFromUrl(secret, `Bearer ${publishable}`)).toEqual({
      code: Code.Unauthenticated,
      message: SECRET_IN_URL,
    });
    expect(await admitFromUrl("not-a-key")).toEqual({
      code: Code.Unauthenticated,
      message: "missing or invalid API key (send Authorization Bearer with your key)",
    });
  });

  it("a revoked publishable key is refused from the URL too", async () => {
    const created = await admin().createApiKey({ affiliateId: "aff-pub", publishable: true, allowedOrigins: [BOARD] });
    expect((await admitFromUrl(created.secret)).caller).toBe(created.apiKey?.id);
    await admin().revokeApiKey({ id: created.apiKey?.id ?? "" });
    await keysFollowed();
    expect((await admitFromUrl(created.secret)).code).toBe(Code.Unauthenticated);
  });
});
