/**
 * The REST skin of the operation: `POST {BASE_PATH}/top-affiliate-wagers-by-period`
 * with the contract's envelope. It runs the same steps as the Connect skin, in
 * the contract's order: path and method (404, 405), key (401), rate limit
 * (429), body size and media type (413, 415), body and fields (400), query.
 */
import type { ServerResponse } from "node:http";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { ConnectError } from "@connectrpc/connect";
import type { connectNodeAdapter } from "@connectrpc/connect-node";
import { asConnectError, codeName, httpStatusForCode, ServiceError, type Violation, violationsOf } from "../errors.js";
import type { PeriodRequestFields } from "../leaderboard/period-request.js";
import { periodFromRequest } from "../leaderboard/period-request.js";
import type { Leaderboard, RankedUser } from "../leaderboard/top-wagers.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../observability/metrics.js";
import { acceptsGzip } from "./accept-encoding.js";
import type { Admission } from "./admission.js";
import { AnswerMemo } from "./answer-memo.js";
import { freshness } from "./freshness.js";

type NodeHandlerFn = ReturnType<typeof connectNodeAdapter>;

/** The request and response types of Connect's node adapter: HTTP/1.1 or HTTP/2. */
export type NodeRequest = Parameters<NodeHandlerFn>[0];
export type NodeResponse = Parameters<NodeHandlerFn>[1];

export const OPERATION_PATH = "/top-affiliate-wagers-by-period";
export const MAX_BODY_BYTES = 64 * 1024;
const gzipAsync = promisify(gzip);

interface ErrorItem {
  readonly code: string;
  readonly message: string;
  readonly field?: string;
}

/** An HTTP-level refusal that has no RPC code (404, 405, 413, 415). */
class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export interface RestOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly leaderboard: Leaderboard;
  readonly metrics?: Metrics;
  readonly logger?: Logger;
}

/** Collapses repeated slashes and drops a trailing one, so "//a//b/" routes like "/a/b". */
export function normalizePath(rawUrl: string): string {
  const path = rawUrl.split("?", 1)[0] ?? "";
  const collapsed = path.replace(/\/{2,}/g, "/");
  return collapsed.length > 1 ? collapsed.replace(/\/$/, "") : collapsed;
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

  constructor(private readonly options: RestOptions) {
    this.path = `${options.basePath}${OPERATION_PATH}`;
  }

  /** True when this request is for the REST operation's path (any method). */
  matches(path: string): boolean {
    return path === this.path;
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const startedAt = process.hrtime.bigint();
    let rateHeaders: Readonly<Record<string, string>> = {};
    let code = "ok";
    try {
      if (req.method !== "POST") {
        throw new HttpRefusal(405, "method_not_allowed", `use POST for ${this.path}`, { allow: "POST" });
      }
      const admitted = await this.options.admission.admit(req.headers.authorization, req.socket.remoteAddress);
      rateHeaders = admitted.headers;
      const request = await readJsonBody(req);
      const fields = decodeRequestFields(request);
      const validation = periodFromRequest(fields.values);
      const violations = [...fields.violations, ...(validation.ok ? [] : validation.violations)];
      if (violations.length > 0 || !validation.ok) throw invalidRequest(violations);
      const standings = await this.options.leaderboard.topWagersForPeriod(
        admitted.caller.affiliateId,
        validation.query,
      );
      const body =
        standings.cacheKey === undefined
          ? bodyOf(renderEntries(standings.ranked))
          : this.renderedBodies.get(standings.cacheKey, validation.query.numUsers, () =>
              bodyOf(renderEntries(standings.ranked)),
            );
      await send(req, res, 200, body, {
        ...rateHeaders,
        "cache-control": freshness(standings.maxAgeSeconds),
      });
    } catch (reason) {
      code = reason instanceof HttpRefusal ? reason.code : codeName(asConnectError(reason).code);
      const cause = reason instanceof ConnectError ? reason.cause : reason;
      if (cause !== undefined && !(reason instanceof HttpRefusal)) {
        this.options.logger?.error({ err: cause, path: this.path, code }, "REST call failed");
      }
      await sendError(req, res, reason, rateHeaders).catch((failure: unknown) => {
        // The connection is gone or the response half-written: nothing left to tell the client.
        this.options.logger?.warn({ err: failure }, "could not send REST error response");
        res.destroy?.();
      });
    } finally {
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      this.options.metrics?.observeCall(`POST ${this.path}`, "rest", code, seconds);
    }
  }
}

/** Answers 404 in the REST envelope, pointing at the operation's path. */
export async function sendNotFound(req: NodeRequest, res: NodeResponse, operationPath: string): Promise<void> {
  await sendError(
    req,
    res,
    new HttpRefusal(404, "not_found", `no such path. The operation is POST ${operationPath}`),
    {},
  );
}

function invalidRequest(violations: readonly Violation[]): ServiceError {
  // One problem per field, in field order: a field of the wrong type is reported
  // by the decoder, and the shared rules then see it as absent ("is required").
  const order = ["startTimestamp", "endTimestamp", "numUsers"];
  const sorted = [...violations].sort((a, b) => order.indexOf(a.field ?? "") - order.indexOf(b.field ?? ""));
  const unique = sorted.filter((v, i) => sorted.findIndex((w) => w.field === v.field) === i || v.field === undefined);
  return new ServiceError("INVALID_ARGUMENT", unique.map((v) => v.message).join(". "), { violations: unique });
}

async function readJsonBody(req: NodeRequest): Promise<unknown> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > MAX_BODY_BYTES) {
    throw new HttpRefusal(413, "payload_too_large", `request body is larger than ${MAX_BODY_BYTES} bytes`, {
      connection: "close",
    });
  }
  const contentType = req.headers["content-type"] ?? "";
  const mediaType = contentType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  if (mediaType !== "application/json") {
    throw new HttpRefusal(
      415,
      "unsupported_media_type",
      contentType === ""
        ? "Content-Type is required. Send application/json"
        : `Content-Type ${contentType} is not supported. Send application/json`,
    );
  }
  const text = await readText(req);
  if (text.trim() === "")
    throw invalidRequest([
      { message: "request body is empty. Send a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidRequest([{ message: `request body is not valid JSON (${(error as Error).message})` }]);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidRequest([
      { message: "request body must be a JSON object with startTimestamp, endTimestamp and numUsers" },
    ]);
  }
  return body;
}

/** The body as text, refusing it with 413 as soon as it grows past the limit. */
function readText(req: NodeRequest): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeListener("data", onData);
        req.removeListener("end", onEnd);
        reject(
          new HttpRefusal(413, "payload_too_large", `request body is larger than ${MAX_BODY_BYTES} bytes`, {
            connection: "close",
          }),
        );
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString("utf8") : Buffer.concat(chunks).toString("utf8"));
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("error", reject);
  });
}

/**
 * Reads the three fields from the JSON object. Whole numbers and strings of
 * digits are accepted (as proto JSON does); anything else names the field.
 * Unknown fields are ignored.
 */
function decodeRequestFields(body: unknown): { values: PeriodRequestFields; violations: Violation[] } {
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
  return {
    values: {
      startTimestamp: wholeNumber("startTimestamp"),
      endTimestamp: wholeNumber("endTimestamp"),
      numUsers: wholeNumber("numUsers"),
    },
    violations,
  };
}

/**
 * The success body. `totalWagered` is written as the exact decimal text from the
 * database, so the JSON number carries every digit; no float arithmetic happens.
 */
export function renderEntries(ranked: readonly RankedUser[]): string {
  const entries = ranked.map(
    (user) =>
      `{"username":${JSON.stringify(user.username)},"avatar":${JSON.stringify(user.avatar)},"totalWagered":${user.totalWagered}}`,
  );
  return `{"data":[${entries.join(",")}],"errors":null}`;
}

async function sendError(
  req: NodeRequest,
  res: NodeResponse,
  reason: unknown,
  rateHeaders: Readonly<Record<string, string>>,
): Promise<void> {
  let status: number;
  let items: ErrorItem[];
  let headers: Record<string, string> = { ...rateHeaders, "cache-control": "no-store" };
  if (reason instanceof HttpRefusal) {
    status = reason.status;
    items = [{ code: reason.code, message: reason.message }];
    headers = { ...headers, ...reason.headers };
  } else {
    const error = asConnectError(reason);
    status = httpStatusForCode(error.code);
    const code = codeName(error.code);
    const own = violationsOf(error);
    const violations = own.length > 0 ? own : [{ message: error.rawMessage }];
    items = violations.map((v) =>
      v.field === undefined ? { code, message: v.message } : { code, message: v.message, field: v.field },
    );
    error.metadata.forEach((value, name) => {
      headers[name] = value;
    });
  }
  await send(req, res, status, bodyOf(JSON.stringify({ data: null, errors: items })), headers);
}

async function send(
  req: NodeRequest,
  res: NodeResponse,
  status: number,
  body: Body,
  headers: Readonly<Record<string, string>>,
): Promise<void> {
  let payload = body.plain;
  const out: Record<string, string> = {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    vary: "Accept-Encoding",
  };
  if (acceptsGzip(req.headers["accept-encoding"])) {
    body.gzipped ??= await gzipAsync(body.plain);
    payload = body.gzipped;
    out["content-encoding"] = "gzip";
  }
  out["content-length"] = String(payload.length);
  // HTTP/2 has no Connection header (the stream ends; the session stays).
  if (req.httpVersionMajor >= 2) delete out.connection;
  if (res.headersSent) return;
  (res as ServerResponse).writeHead(status, out);
  (res as ServerResponse).end(payload);
}
