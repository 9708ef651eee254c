/**
 * The REST side of live boards: `GET {BASE_PATH}/top-affiliate-wagers-by-period/stream`
 * answers `text/event-stream` (Server-Sent Events) on HTTP/1.1 and h2c.
 *
 * The stream starts with `retry: 2000`; each board is `event: board`,
 * `id: <version>`, `data: <the POST's success envelope on one line>`; a
 * heartbeat is the comment `: heartbeat`. `Last-Event-ID` resumes as
 * `resume_version` does. Refusals are the POST's JSON envelope with its
 * statuses and messages (405, 401, 429, 400 naming the field, 503), never an
 * event stream. Query values are strings: digit strings are whole numbers;
 * `rankBy=wagered|weighted` as in the POST body. `signed=true` adds each board's
 * signature to its event (`"signed"` after `"errors"`, ./parts/board-signatures.ts),
 * signed once per board version however many viewers ask.
 */

import type { Admission } from "../../keys/gate/admission.js";
import { requireScope } from "../../keys/gate/scopes.js";
import { HttpRefusal } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import type { ObserveCall } from "../../platform/observability/call-observation.js";
import { nodeExchange } from "../../platform/transport/exchange.js";
import { type NodeRequest, type NodeResponse, writeHead } from "../../platform/transport/http.js";
import { refuse } from "../../platform/wire/parts/rest-reply.js";
import type { BoardSnapshot } from "../core/board-snapshot.js";
import type { LiveBoards } from "../core/live-boards.js";
import { validPeriodQuery, WATCH_PROCEDURE } from "../core/operation.js";
import { renderEntries } from "./codecs/entries-json.js";
import { decodeRequestFields } from "./codecs/period-request-json.js";
import { type BoardSignatures, type SignedBoardOf, withSigned } from "./parts/board-signatures.js";
import { type Frames, liveError, ResponseViewer } from "./parts/live-streams.js";
import { STREAM_PATH } from "./parts/rest-paths.js";
import { SignedBoardViewer } from "./parts/signed-board-viewer.js";

/** How long EventSource waits before reconnecting, in ms (the stream's first line). */
const RECONNECT_MS = 2000;
const PREAMBLE = Buffer.from(`retry: ${RECONNECT_MS}\n\n`, "utf8");
const HEARTBEAT = Buffer.from(": heartbeat\n\n", "utf8");

/**
 * A board as one event; JSON never holds a raw line break, so `data` is one line. With the weighted
 * total when the POST would show it (rankBy named, or ranked by weight).
 */
const sseFrames = (weighted: boolean): Frames => ({
  board: (snapshot: BoardSnapshot) =>
    Buffer.from(`event: board\nid: ${snapshot.version}\ndata: ${renderEntries(snapshot.ranked, weighted)}\n\n`, "utf8"),
  heartbeat: () => HEARTBEAT,
});
const SSE_FRAMES = sseFrames(false);
const SSE_FRAMES_WEIGHTED = sseFrames(true);

export interface BoardStreamOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly live: LiveBoards;
  /** The client's address for the per-address stream limit. */
  readonly clientAddress: (req: NodeRequest) => string;
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
  /** Signs board versions for viewers that ask (`signed=true`); absent: the parameter is ignored. */
  readonly signatures?: BoardSignatures;
}

export class BoardStream {
  readonly path: string;
  /** Each snapshot's signed frames (plain, weighted), made once for all its signed viewers. */
  private readonly signedFrames = new WeakMap<BoardSnapshot, Map<boolean, Promise<Buffer>>>();

  constructor(private readonly options: BoardStreamOptions) {
    this.path = `${options.basePath}${STREAM_PATH}`;
  }

  matches(path: string): boolean {
    return path === this.path;
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const startedAt = process.hrtime.bigint();
    let rateHeaders: Readonly<Record<string, string>> = {};
    let failure: unknown;
    let address: string | undefined;
    let keyId: string | undefined;
    try {
      if (req.method !== "GET") {
        throw new HttpRefusal("METHOD_NOT_ALLOWED", `use GET for ${this.path}`, { allow: "GET" });
      }
      address = this.options.clientAddress(req);
      const params = queryParams(req.url ?? "");
      // EventSource cannot set headers: a publishable key may come as ?key= (a secret one is refused there).
      const admitted = await this.options.admission.admitWithUrlKey(req.headers, params.get("key"), address);
      keyId = admitted.caller.keyId;
      rateHeaders = admitted.headers;
      requireScope(admitted.caller, "boards:read");
      const fields = decodeRequestFields(queryFields(params));
      const query = validPeriodQuery(fields.values, fields.violations, admitted.caller.defaultRankBy);
      const weighted = fields.values.rankBy !== undefined || query.rankBy === "weighted";
      const board = {
        affiliateId: admitted.caller.affiliateId,
        start: query.start,
        end: query.end,
        rankBy: query.rankBy ?? "wagered",
      };
      const signatures = params.get("signed") === "true" ? this.options.signatures : undefined;
      const viewer =
        signatures === undefined
          ? sseViewer(res, weighted, rateHeaders)
          : signedSseViewer(res, rateHeaders, (snapshot) => this.signedFrame(signatures, snapshot, board, weighted));
      const lastEventId = req.headers["last-event-id"];
      const subscription = await this.options.live
        .open(
          { affiliateId: admitted.caller.affiliateId, ...query },
          { keyId: admitted.caller.keyId, address, scope: "boards:read" },
          viewer,
          typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : undefined,
        )
        .catch((error: unknown) => {
          throw liveError(error);
        });
      viewer.flush();
      if (viewer.gone) subscription.close();
      else res.once("close", () => subscription.close());
    } catch (reason) {
      failure = reason;
      // Refusals are the POST's JSON envelope, never an event stream.
      await refuse(nodeExchange(req, res), reason, rateHeaders, this.options.logger);
    } finally {
      this.options.observe?.(WATCH_PROCEDURE, "sse", startedAt, failure, {
        keyId,
        clientAddress: address,
        path: req.url,
      });
    }
  }
  /** A snapshot's signed event: the board's envelope with its `signed` member, made once per snapshot and format. */
  private signedFrame(
    signatures: BoardSignatures,
    snapshot: BoardSnapshot,
    board: SignedBoardOf,
    weighted: boolean,
  ): Promise<Buffer> {
    let frames = this.signedFrames.get(snapshot);
    if (frames === undefined) {
      frames = new Map();
      this.signedFrames.set(snapshot, frames);
    }
    let frame = frames.get(weighted);
    if (frame === undefined) {
      const version = { key: snapshot, ranked: snapshot.ranked, version: snapshot.version };
      frame = signatures.signedJson(version, board).then((signed) => {
        const data = withSigned(renderEntries(snapshot.ranked, weighted), signed);
        return Buffer.from(`event: board\nid: ${snapshot.version}\ndata: ${data}\n\n`, "utf8");
      });
      frames.set(weighted, frame);
      frame.catch(() => frames.delete(weighted));
    }
    return frame;
  }
}

/** The stream's viewer of signed boards: as sseViewer, each board's event with its signature. */
function signedSseViewer(
  res: NodeResponse,
  rateHeaders: Readonly<Record<string, string>>,
  frame: (snapshot: BoardSnapshot) => Promise<Buffer>,
): SignedBoardViewer {
  return new SignedBoardViewer(res, {
    protocol: "sse",
    frame,
    heartbeat: () => HEARTBEAT,
    begin: () => {
      writeHead(res, 200, sseHeaders(rateHeaders));
      res.write(PREAMBLE);
    },
    finish: () => res.end(),
  });
}

function sseHeaders(rateHeaders: Readonly<Record<string, string>>): Record<string, string> {
  return {
    ...rateHeaders,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-accel-buffering": "no",
  };
}

/** The stream's viewer: the event-stream headers and the retry line first, then a board or a heartbeat per event. */
function sseViewer(
  res: NodeResponse,
  weighted: boolean,
  rateHeaders: Readonly<Record<string, string>>,
): ResponseViewer {
  const headers = sseHeaders(rateHeaders);
  return new ResponseViewer(res, {
    protocol: "sse",
    frames: weighted ? SSE_FRAMES_WEIGHTED : SSE_FRAMES,
    begin: () => {
      writeHead(res, 200, headers);
      res.write(PREAMBLE);
    },
    // EventSource reconnects with Last-Event-ID (to another instance; a revoked key then gets 401).
    finish: () => res.end(),
  });
}

/** The query string's parameters. */
function queryParams(url: string): URLSearchParams {
  return new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");
}

/** The request's fields from the query string (the first of repeated names), as strings. */
function queryFields(params: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ["startTimestamp", "endTimestamp", "numUsers", "rankBy"]) {
    const value = params.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}
