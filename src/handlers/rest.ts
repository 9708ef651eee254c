/**
 * The REST skin of the operation: `POST {BASE_PATH}/top-affiliate-wagers-by-period`
 * with the contract's envelope. It keeps only HTTP concerns: path and method
 * (404, 405), the admission step every protocol shares (401, 429), body size
 * and media type (413, 415), the JSON body (400), then the operation
 * (leaderboard/operation.ts), the envelope and gzip. The order is the contract's.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Admission } from "../auth/admission.js";
import { AnswerMemo } from "../cache/answer-memo.js";
import { HttpRefusal, invalidArgument } from "../errors/catalogue.js";
import { renderRestError } from "../errors/renderers.js";
import type { Leaderboard, RankedUser } from "../leaderboard/leaderboard.js";
import { answerPeriodRequest, TOP_WAGERS_PROCEDURE } from "../leaderboard/operation.js";
import type { PeriodRequestFields } from "../leaderboard/period-request.js";
import type { Logger } from "../logger.js";
import type { ObserveCall } from "../observability/call-observation.js";
import { acceptsGzip } from "../transport/accept-encoding.js";
import { cacheControl } from "../transport/cache-control.js";
import { type Exchange, nodeExchange } from "../transport/exchange.js";
import { bodyIfComplete, type NodeRequest, type NodeResponse, readStream, writeWhole } from "../transport/http.js";
import type { Violation } from "../values/violation.js";
import { isRankBy, type RankBy } from "../values/weights.js";

export const OPERATION_PATH = "/top-affiliate-wagers-by-period";
const gzipAsync = promisify(gzip);

export interface RestOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly leaderboard: Leaderboard;
  /** Bodies larger than this are refused with 413 (the listener's limit, the same for every protocol). */
  readonly maxBodyBytes: number;
  /** Counts, times and logs the call, as for every protocol (observability/call-observation.ts). */
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
}

/** A response body, with its gzip form made at most once. */
interface Body {
  readonly plain: Buffer;
  gzipped?: Buffer;
}

function bodyOf(text: string): Body {
  return { plain: Buffer.from(text, "utf8") };
}

export class RestApi {
  readonly path: string;
  /** Rendered success bodies of cached answers: a cache hit costs no JSON rendering or compression. */
  private readonly renderedBodies = new AnswerMemo<Body>();
  /** Request bodies seen lately, decoded: a leaderboard sends the same few bodies again and again. */
  private readonly decodedBodies = new DecodedBodies();

  constructor(private readonly options: RestOptions) {
    this.path = `${options.basePath}${OPERATION_PATH}`;
  }

  /** True when this request is for the REST operation's path (any method). */
  matches(path: string): boolean {
    return path === this.path;
  }

  async handle(exchange: Exchange): Promise<void> {
    const startedAt = process.hrtime.bigint();
    let rateHeaders: Readonly<Record<string, string>> = NO_HEADERS;
    let failure: unknown;
    let keyId: string | undefined;
    try {
      if (exchange.method !== "POST") {
        throw new HttpRefusal("METHOD_NOT_ALLOWED", `use POST for ${this.path}`, { allow: "POST" });
      }
      // The key is read from Authorization only: ?key= is for the GET paths a browser opens without headers.
      const admitted = await this.options.admission.admitRequest({
        authorization: exchange.headers.authorization,
        clientAddress: exchange.clientAddress,
        origin: exchange.headers.origin,
      });
      keyId = admitted.caller.keyId;
      rateHeaders = admitted.headers;
      const { maxBodyBytes } = this.options;
      const tooLarge = () => payloadTooLarge(maxBodyBytes);
      checkJsonBodyHeaders(exchange, maxBodyBytes);
      const bytes =
        bodyIfComplete(exchange.body, maxBodyBytes, tooLarge, exchange.headers["content-length"]) ??
        (await readJsonBody(exchange, maxBodyBytes));
      const fields = this.decodedBodies.decode(bytes);
      // A cached answer comes at once, without a promise.
      const answering = answerPeriodRequest(
        this.options.leaderboard,
        admitted.caller,
        fields.values,
        fields.violations,
      );
      const answer = answering instanceof Promise ? await answering : answering;
      // A request that names rankBy, or a board ranked by weight (a key's default), shows the weighted total too;
      // any other answer is exactly the three fields it always was.
      const weighted = answer.rankByAsked || answer.rankBy === "weighted";
      const render = () => bodyOf(renderEntries(answer.ranked, weighted));
      const body =
        answer.memoKey === undefined
          ? render()
          : this.renderedBodies.get(answer.memoKey, answer.numUsers * 2 + (weighted ? 1 : 0), render);
      const gzipping = send(exchange, 200, body, rateHeaders, { "cache-control": cacheControl(answer.maxAgeSeconds) });
      if (gzipping !== undefined) await gzipping;
    } catch (reason) {
      failure = reason;
      await this.refuse(exchange, reason, rateHeaders);
    } finally {
      this.options.observe?.(TOP_WAGERS_PROCEDURE, "rest", startedAt, failure, {
        keyId,
        clientAddress: exchange.clientAddress,
        path: this.path,
      });
    }
  }

  /**
   * A CORS preflight (OPTIONS) of the POST or the live stream: 204 with the CORS headers when some
   * usable publishable key allows the Origin, else 403 without them.
   */
  async preflight(req: NodeRequest, res: NodeResponse): Promise<void> {
    const answer = this.options.admission.preflight(req.headers.origin);
    if (!answer.allowed) {
      const origin = req.headers.origin;
      return this.refuse(
        nodeExchange(req, res),
        new HttpRefusal(
          "CORS_REFUSED",
          origin === undefined
            ? "a CORS preflight needs an Origin header"
            : `origin ${origin} is not allowed by any publishable key`,
        ),
      );
    }
    writeWhole(res, 204, { ...answer.headers, "cache-control": "no-store" }, "");
  }

  /** Answers a refusal or an error in the envelope (404 for unknown paths comes through here too). */
  async refuse(
    exchange: Exchange,
    reason: unknown,
    rateHeaders: Readonly<Record<string, string>> = NO_HEADERS,
  ): Promise<void> {
    const rendered = renderRestError(reason);
    try {
      await send(exchange, rendered.status, bodyOf(rendered.body), rateHeaders, rendered.headers);
    } catch (failure) {
      // The connection is gone or the response half-written: nothing left to tell the client.
      this.options.logger?.warn({ err: failure }, "could not send REST error response");
      exchange.abort();
    }
  }
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

function payloadTooLarge(maxBytes: number): HttpRefusal {
  return new HttpRefusal("PAYLOAD_TOO_LARGE", `request body is larger than ${maxBytes} bytes`, { connection: "close" });
}

/** Refuses a body declared too large (413) and one that is not JSON (415), before any of it is read. */
function checkJsonBodyHeaders(exchange: Exchange, maxBytes: number): void {
  const declared = exchange.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) throw payloadTooLarge(maxBytes);
  const contentType = exchange.headers["content-type"] ?? "";
  // The usual spelling needs no parsing.
  if (contentType === "application/json") return;
  const mediaType = contentType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  if (mediaType !== "application/json") {
    throw new HttpRefusal(
      "UNSUPPORTED_MEDIA_TYPE",
      contentType === ""
        ? "Content-Type is required. Send application/json"
        : `Content-Type ${contentType} is not supported. Send application/json`,
    );
  }
}

/** The body as it arrives (refused with 413 once it grows past `maxBytes`). */
function readJsonBody(exchange: Exchange, maxBytes: number): Promise<Buffer> {
  return readStream(exchange.body, maxBytes, () => payloadTooLarge(maxBytes));
}

/** The body's JSON object, or the operation's invalid_argument saying what is wrong with it. */
function parseJsonObject(bytes: Buffer): unknown {
  const text = bytes.toString("utf8");
  if (text.trim() === "")
    throw invalidArgument([
      { message: "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidArgument([{ message: `request body is not valid JSON (${(error as Error).message})` }]);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidArgument([
      { message: "request body must be a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  }
  return body;
}

type DecodedFields = ReturnType<typeof decodeRequestFields>;

/**
 * The fields of a request body (parseJsonObject, then decodeRequestFields), remembered by the body's
 * text for the bodies seen lately: decoding is a pure function of the bytes, and a leaderboard asks
 * the same question again and again. Bounded (the body remembered longest ago goes first); bodies
 * larger than MAX_BYTES, and bodies that are not a JSON object (an error), are decoded every time.
 * What it hands out is frozen: callers share it.
 */
export class DecodedBodies {
  static readonly MAX_BYTES = 512;
  // A Map iterates in insertion order: the first key is the oldest.
  private readonly known = new Map<string, DecodedFields>();

  constructor(private readonly maxEntries = 256) {}

  decode(bytes: Buffer): DecodedFields {
    if (bytes.length > DecodedBodies.MAX_BYTES) return decodeRequestFields(parseJsonObject(bytes));
    // The bytes as a key (latin1 maps each byte to one character, so different bodies never share one).
    const key = bytes.toString("latin1");
    const known = this.known.get(key);
    if (known !== undefined) return known;
    const decoded = decodeRequestFields(parseJsonObject(bytes));
    const frozen = Object.freeze({
      values: Object.freeze(decoded.values),
      violations: Object.freeze(decoded.violations.map((v) => Object.freeze(v))) as Violation[],
    });
    this.known.set(key, frozen);
    if (this.known.size > this.maxEntries) {
      const oldest = this.known.keys().next();
      if (oldest.done !== true) this.known.delete(oldest.value);
    }
    return frozen;
  }
}

/**
 * Reads the fields from the JSON object. Whole numbers and strings of digits
 * are accepted for the three numbers (as proto JSON does); rankBy is "wagered"
 * or "weighted"; anything else names the field. Unknown fields are ignored.
 */
export function decodeRequestFields(body: unknown): { values: PeriodRequestFields; violations: Violation[] } {
  const record = body as Record<string, unknown>;
  const violations: Violation[] = [];
  const wholeNumber = (field: string): bigint | undefined => {
    if (!Object.hasOwn(record, field)) return undefined;
    const value = record[field];
    if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
    if (typeof value === "string" && /^-?\d{1,30}$/.test(value)) return BigInt(value);
    violations.push({ field, message: `${field} must be a whole number, got ${JSON.stringify(value)}` });
    return undefined;
  };
  let rankBy: RankBy | undefined;
  if (Object.hasOwn(record, "rankBy")) {
    if (isRankBy(record.rankBy)) rankBy = record.rankBy;
    else {
      violations.push({
        field: "rankBy",
        message: `rankBy must be "wagered" or "weighted", got ${JSON.stringify(record.rankBy)}`,
      });
    }
  }
  return {
    values: {
      startTimestamp: wholeNumber("startTimestamp"),
      endTimestamp: wholeNumber("endTimestamp"),
      numUsers: wholeNumber("numUsers"),
      rankBy,
    },
    violations,
  };
}

/**
 * The success body. `totalWagered` (and `weightedWagered` when asked for) are written as the
 * exact decimal text from the database, so the JSON number carries every digit; no float
 * arithmetic happens.
 */
export function renderEntries(ranked: readonly RankedUser[], weighted = false): string {
  const entries = ranked.map(
    (user) =>
      `{"username":${JSON.stringify(user.username)},"avatar":${JSON.stringify(user.avatar)},"totalWagered":${user.totalWagered}${weighted ? `,"weightedWagered":${user.weightedWagered}` : ""}}`,
  );
  return `{"data":[${entries.join(",")}],"errors":null}`;
}

/**
 * Sends a whole answer: `headerSets` (rate limit and CORS, caching, a refusal's own) and the body's
 * own headers. Returns a promise only when the body has to be compressed first (once per body).
 */
function send(
  exchange: Exchange,
  status: number,
  body: Body,
  ...headerSets: Readonly<Record<string, string>>[]
): Promise<void> | undefined {
  if (exchange.answered) return undefined;
  const gzip = acceptsGzip(exchange.headers["accept-encoding"]);
  if (gzip && body.gzipped === undefined) {
    return gzipAsync(body.plain).then((gzipped) => {
      body.gzipped ??= gzipped;
      send(exchange, status, body, ...headerSets);
    });
  }
  const out: Record<string, string | number> = {};
  for (const headers of headerSets) Object.assign(out, headers);
  out["content-type"] = "application/json; charset=utf-8";
  out.vary = out.vary === undefined ? "Accept-Encoding" : `Accept-Encoding, ${out.vary}`;
  let payload = body.plain;
  if (gzip && body.gzipped !== undefined) {
    payload = body.gzipped;
    out["content-encoding"] = "gzip";
  }
  out["content-length"] = payload.length;
  // HTTP/2 has no Connection header (the stream ends; the session stays).
  if (exchange.httpVersionMajor >= 2) delete out.connection;
  exchange.answer(status, out, payload);
  return undefined;
}
