/**
 * The REST skin of the operation: `POST {BASE_PATH}/top-affiliate-wagers-by-period`
 * with the contract's envelope. It keeps only HTTP concerns: path and method
 * (404, 405), the admission step every protocol shares (401, 429), body size
 * and media type (413, 415), the JSON body (400), then the operation
 * (boards/core/operation.ts), the envelope and gzip. The order is the contract's.
 */
import type { Admission } from "../../keys/gate/admission.js";
import { requireScope } from "../../keys/gate/scopes.js";
import { HttpRefusal } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import type { ObserveCall } from "../../platform/observability/call-observation.js";
import { cacheControl } from "../../platform/transport/cache-control.js";
import type { Exchange } from "../../platform/transport/exchange.js";
import { bodyIfComplete, readStream } from "../../platform/transport/http.js";
import { type Body, bodyOf, NO_HEADERS, refuse, send } from "../../platform/wire/parts/rest-reply.js";
import { boardVersion } from "../core/board-snapshot.js";
import type { Leaderboard } from "../core/leaderboard.js";
import { answerPeriodRequest, TOP_WAGERS_PROCEDURE, type TopWagersAnswer } from "../core/operation.js";
import type { PeriodRequestFields } from "../core/period-request.js";
import { DecodedBodies } from "./codecs/decoded-bodies.js";
import { renderEntries } from "./codecs/entries-json.js";
import type { DecodedFields } from "./codecs/period-request-json.js";
import { AnswerMemo } from "./parts/answer-memo.js";
import { type BoardSignatures, withSigned } from "./parts/board-signatures.js";
import { OPERATION_PATH } from "./parts/rest-paths.js";

export interface RestOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly leaderboard: Leaderboard;
  /** Bodies larger than this are refused with 413 (the listener's limit, the same for every protocol). */
  readonly maxBodyBytes: number;
  /** Counts, times and logs the call, as for every protocol (platform/observability/call-observation.ts). */
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
  /** Signs answers for bodies that ask (`"signed": true`); absent: the field is ignored. */
  readonly signatures?: BoardSignatures;
}

export class RestApi {
  readonly path: string;
  /** Rendered success bodies of cached answers: a cache hit costs no JSON rendering or compression. */
  private readonly renderedBodies = new AnswerMemo<Body>();
  /** Request bodies seen lately, decoded: a client site sends the same few bodies again and again. */
  private readonly decodedBodies = new DecodedBodies();
  /**
   * Signed bodies by the cached answer (`memoKey`, else the answer's own entries) and variant (the list length,
   * whether the weighted total is shown), as renderedBodies keeps the plain ones: a hit of a signed answer costs no
   * promise, no hash and no rendering.
   */
  private readonly signedBodies = new WeakMap<object, Map<number, Body | Promise<Body>>>();

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
      requireScope(admitted.caller, "boards:read");
      const reading = this.requestBytes(exchange);
      const fields = this.decodedBodies.decode(reading instanceof Promise ? await reading : reading);
      // A cached answer comes at once, without a promise.
      const answering = answerPeriodRequest(
        this.options.leaderboard,
        admitted.caller,
        fields.values,
        fields.violations,
      );
      const answer = answering instanceof Promise ? await answering : answering;
      const making = this.answerBody(answer, fields, admitted.caller.affiliateId);
      // A version signed already comes at once, without a promise (as a cached answer does).
      const body = making instanceof Promise ? await making : making;
      const gzipping = send(exchange, 200, body, rateHeaders, { "cache-control": cacheControl(answer.maxAgeSeconds) });
      if (gzipping !== undefined) await gzipping;
    } catch (reason) {
      failure = reason;
      await refuse(exchange, reason, rateHeaders, this.options.logger);
    } finally {
      this.options.observe?.(TOP_WAGERS_PROCEDURE, "rest", startedAt, failure, {
        keyId,
        clientAddress: exchange.clientAddress,
        path: this.path,
      });
    }
  }

  /** The request's JSON body: at once when it came whole with its headers, else read from the stream. */
  private requestBytes(exchange: Exchange): Buffer | Promise<Buffer> {
    const { maxBodyBytes } = this.options;
    const tooLarge = () => payloadTooLarge(maxBodyBytes);
    checkJsonBodyHeaders(exchange, maxBodyBytes);
    return (
      bodyIfComplete(exchange.body, maxBodyBytes, tooLarge, exchange.headers["content-length"]) ??
      readJsonBody(exchange, maxBodyBytes)
    );
  }

  /** The answer's body: its envelope, rendered once per cached answer, or signed when the request asks. */
  private answerBody(answer: TopWagersAnswer, fields: DecodedFields, affiliateId: number): Body | Promise<Body> {
    // A request that names rankBy, or a board ranked by weight (a key's default), shows the weighted total too;
    // any other answer is exactly the three fields it always was.
    const weighted = answer.rankByAsked || answer.rankBy === "weighted";
    const { signatures } = this.options;
    if (fields.signed === true && signatures !== undefined) {
      return this.signedBody(signatures, answer, weighted, { affiliateId, ...fields });
    }
    const render = () => bodyOf(renderEntries(answer.ranked, weighted));
    return answer.memoKey === undefined
      ? render()
      : this.renderedBodies.get(answer.memoKey, answer.numUsers * 2 + (weighted ? 1 : 0), render);
  }

  /**
   * The answer's envelope with its `signed` member: signed once per answer (every hit of a cached answer shares
   * its entries, and so its signature and body), whoever asks.
   */
  private signedBody(
    signatures: BoardSignatures,
    answer: TopWagersAnswer,
    weighted: boolean,
    request: SignedRequest,
  ): Body | Promise<Body> {
    const { ranked } = answer;
    const answerKey = answer.memoKey ?? ranked;
    let bodies = this.signedBodies.get(answerKey);
    if (bodies === undefined) {
      bodies = new Map();
      this.signedBodies.set(answerKey, bodies);
    }
    const variant = answer.numUsers * 2 + (weighted ? 1 : 0);
    let body = bodies.get(variant);
    if (body === undefined) {
      const version = {
        key: ranked,
        ranked,
        get version() {
          return boardVersion(ranked);
        },
      };
      const board = {
        affiliateId: request.affiliateId,
        start: Number(request.values.startTimestamp),
        end: Number(request.values.endTimestamp),
        rankBy: answer.rankBy,
      };
      const made = bodies;
      const signing = signatures.signedJson(version, board).then((signed) => {
        const signedBody = bodyOf(withSigned(renderEntries(ranked, weighted), signed));
        made.set(variant, signedBody);
        return signedBody;
      });
      signing.catch(() => made.delete(variant));
      made.set(variant, signing);
      body = signing;
    }
    return body;
  }
}

/** The request a signed body is of: the caller's affiliate and the (valid) period it asked for. */
interface SignedRequest {
  readonly affiliateId: number;
  readonly values: PeriodRequestFields;
}

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
