/**
 * The REST skin (src/boards/wire/rest.ts) on a fake exchange, over the reference model: the body
 * reader's refusals (size, media type, empty, not JSON, not an object), the method, the key, and a
 * success body, each with its exact status, headers and envelope (docs/contract.md). No socket, no
 * database, no Redis.
 */
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { RestApi } from "../../src/boards/wire/rest.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { KeyAdmin } from "../../src/keys/core/key-admin.js";
import { KeySet } from "../../src/keys/core/key-set.js";
import { Admission } from "../../src/keys/gate/admission.js";
import { KeyRateLimiter } from "../../src/platform/limits/rate-limiter.js";
import type { Exchange } from "../../src/platform/transport/exchange.js";
import { ReferenceModel } from "../support/reference-model.js";

const JAN_1 = 1767225600; // 2026-01-01T00:00:00Z
const FEB_1 = 1769904000; // 2026-02-01T00:00:00Z
const NOW = FEB_1 + 12 * 3600;
const MAX_BODY = 256;
const PATH = "/v1/top-affiliate-wagers-by-period";

interface Answer {
  status: number;
  headers: Record<string, string | number>;
  body: string;
}

/** A request as the REST skin receives it; the answer is caught. `chunks` is the body as sent. */
function exchange(request: { method?: string; headers?: Record<string, string>; chunks?: string[] }) {
  let answer: Answer | undefined;
  const fake: Exchange = {
    method: request.method ?? "POST",
    headers: request.headers ?? {},
    clientAddress: "192.0.2.1",
    httpVersionMajor: 1,
    body: Readable.from((request.chunks ?? []).map((c) => Buffer.from(c, "utf8"))),
    get answered() {
      return answer !== undefined;
    },
    answer(status, headers, body) {
      const bytes = typeof body === "string" ? Buffer.from(body) : body;
      const text = headers["content-encoding"] === "gzip" ? gunzipSync(bytes).toString("utf8") : bytes.toString("utf8");
      answer = { status, headers, body: text };
    },
    abort() {
      throw new Error("aborted");
    },
  };
  return {
    fake,
    get answer(): Answer {
      if (answer === undefined) throw new Error("no answer");
      return answer;
    },
  };
}

let rest: RestApi;
let key: string;

beforeAll(async () => {
  const model = new ReferenceModel({ now: () => NOW });
  const keys = new KeySet(model.keyRecords);
  await keys.load();
  const admin = new KeyAdmin(model.apiKeys, { now: () => NOW, afterChange: (ids) => keys.refresh(ids) });
  const issued = await admin.create({ affiliateId: "aff-rest", rateLimit: { points: 1000, windowSeconds: 60 } });
  if (issued.kind !== "issued") throw new Error("no key");
  key = issued.secret;
  const ingest = new WagerIngest(model.ingest, { now: () => NOW });
  await ingest.upsertUsers([
    { id: "r-1", affiliateId: "aff-rest", username: "zoe", avatar: "https://img.example.test/z.png" },
    { id: "r-2", affiliateId: "aff-rest", username: "adam", avatar: "" },
  ]);
  await ingest.recordWagers([
    { id: "rw-1", userId: "r-1", amount: "10.25", placedAt: BigInt(JAN_1), weightBps: 5000 },
    { id: "rw-2", userId: "r-2", amount: "10.25", placedAt: BigInt(FEB_1 - 1) },
  ]);
  rest = new RestApi({
    basePath: "/v1",
    admission: new Admission(keys, new KeyRateLimiter({ points: 60, windowSeconds: 60 })),
    leaderboard: new Leaderboard({
      standings: model.standings,
      defaultAvatarUrl: "https://cdn.example.test/d.png",
      cacheTtlMs: 0,
      now: () => NOW,
    }),
    maxBodyBytes: MAX_BODY,
  });
});

const json = { "content-type": "application/json" };
const auth = () => ({ authorization: `Bearer ${key}` });
const january = JSON.stringify({ startTimestamp: JAN_1, endTimestamp: FEB_1 - 1, numUsers: 5 });

async function post(headers: Record<string, string>, ...chunks: string[]) {
  const call = exchange({ headers, chunks });
  await rest.handle(call.fake);
  return call.answer;
}

const envelope = (code: string, message: string) => JSON.stringify({ data: null, errors: [{ code, message }] });

describe("the REST skin's body reader", () => {
  it("answers a JSON object with the board: ties by username, exact totals", async () => {
    const answer = await post({ ...auth(), ...json }, january);
    expect(answer.status).toBe(200);
    expect(answer.headers["ratelimit-policy"]).toBe('"key";q=1000;w=60');
    expect(answer.body).toBe(
      '{"data":[{"username":"adam","avatar":"https://cdn.example.test/d.png","totalWagered":10.25},' +
        '{"username":"zoe","avatar":"https://img.example.test/z.png","totalWagered":10.25}],"errors":null}',
    );
  });

  it("reads a body that arrives in pieces, and a media type with parameters in any case", async () => {
    const half = january.length >> 1;
    const answer = await post(
      { ...auth(), "content-type": "Application/JSON; charset=utf-8" },
      january.slice(0, half),
      january.slice(half),
    );
    expect(answer.status).toBe(200);
  });

  it("refuses a declared length over the limit with 413 before reading, and closes the connection", async () => {
    const answer = await post({ ...auth(), ...json, "content-length": String(MAX_BODY + 1) }, january);
    expect([answer.status, answer.headers.connection, answer.body]).toEqual([
      413,
      "close",
      envelope("payload_too_large", `request body is larger than ${MAX_BODY} bytes`),
    ]);
  });

  it("refuses a body that grows over the limit without a declared length with 413", async () => {
    const answer = await post({ ...auth(), ...json }, "{", " ".repeat(MAX_BODY), "}");
    expect([answer.status, answer.body]).toEqual([
      413,
      envelope("payload_too_large", `request body is larger than ${MAX_BODY} bytes`),
    ]);
  });

  it("refuses a missing or another media type with 415", async () => {
    expect(await post(auth(), january)).toMatchObject({
      status: 415,
      body: envelope("unsupported_media_type", "Content-Type is required. Send application/json"),
    });
    expect(await post({ ...auth(), "content-type": "text/plain" }, january)).toMatchObject({
      status: 415,
      body: envelope("unsupported_media_type", "Content-Type text/plain is not supported. Send application/json"),
    });
  });

  it("refuses an empty body, text that is not JSON, and JSON that is not an object with 400", async () => {
    expect(await post({ ...auth(), ...json }, "  \n")).toMatchObject({
      status: 400,
      body: envelope(
        "invalid_argument",
        "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers",
      ),
    });
    let parseMessage = "";
    try {
      JSON.parse("{nope");
    } catch (error) {
      parseMessage = (error as Error).message;
    }
    expect(await post({ ...auth(), ...json }, "{nope")).toMatchObject({
      status: 400,
      body: envelope("invalid_argument", `request body is not valid JSON (${parseMessage})`),
    });
    for (const body of ["[1,2]", "null", "42", '"text"']) {
      expect(await post({ ...auth(), ...json }, body)).toMatchObject({
        status: 400,
        body: envelope(
          "invalid_argument",
          "request body must be a JSON object with startTimestamp, endTimestamp and numUsers",
        ),
      });
    }
  });

  it("checks the method first (405 with Allow) and the key before the body (401 on a bad body too)", async () => {
    const get = exchange({ method: "GET", headers: auth() });
    await rest.handle(get.fake);
    expect([get.answer.status, get.answer.headers.allow, get.answer.body]).toEqual([
      405,
      "POST",
      envelope("method_not_allowed", `use POST for ${PATH}`),
    ]);
    const answer = await post({ "content-type": "text/plain" }, "{nope");
    expect([answer.status, answer.headers["www-authenticate"], answer.body]).toEqual([
      401,
      'Bearer realm="topwagers"',
      envelope("unauthenticated", "missing or invalid API key (send Authorization Bearer with your key)"),
    ]);
  });

  it("answers gzip when asked, and the weighted board with a fourth field when rankBy names it", async () => {
    const answer = await post(
      { ...auth(), ...json, "accept-encoding": "gzip" },
      JSON.stringify({ startTimestamp: JAN_1, endTimestamp: FEB_1 - 1, numUsers: 5, rankBy: "weighted" }),
    );
    expect([answer.status, answer.headers["content-encoding"]]).toEqual([200, "gzip"]);
    // adam: 10.25 at full weight; zoe: 10.25 × 5000 / 10000 = 5.125
    expect(answer.body).toBe(
      '{"data":[{"username":"adam","avatar":"https://cdn.example.test/d.png","totalWagered":10.25,"weightedWagered":10.25},' +
        '{"username":"zoe","avatar":"https://img.example.test/z.png","totalWagered":10.25,"weightedWagered":5.125}],"errors":null}',
    );
  });
});
