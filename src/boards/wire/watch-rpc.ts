/**
 * The watch procedure (WatchTopAffiliateWagersByPeriod) on gRPC, gRPC-Web and
 * Connect, with stream framing written here rather than by connect-es: each
 * board is encoded once per codec, and the same bytes go to every viewer.
 * connect-es would serialise the board again for each stream; what that costs
 * is measured in docs/benchmarks.md, "Why the watch procedure frames its
 * streams itself". Requests it does not take (another method, an unknown
 * content type, gRPC-Web text) go on to connect-es, which answers them as for
 * any procedure.
 *
 * A call flows: admission (as the unary call: key, rate limit) → the one
 * request message → validation (the unary call's rules and messages) → the
 * live board (limits, first snapshot) → headers and frames until the client
 * leaves, the deadline passes or the server stops.
 *
 * A request with `signed` gets each board with its version's signature (./parts/board-signatures.ts: signed once
 * per version, shared with every viewer, the SSE stream's and REST's included); its message is encoded once per
 * snapshot and codec like the plain ones. Without `signed`, the stream is exactly what it always was.
 */
import { create, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  SignedBoardSchema,
  type WatchTopAffiliateWagersByPeriodRequest,
  WatchTopAffiliateWagersByPeriodRequestSchema,
  WatchTopAffiliateWagersByPeriodResponseSchema,
} from "../../../gen/topwagers/v1/top_wagers_pb.js";
import type { Admission } from "../../keys/gate/admission.js";
import { requireScope } from "../../keys/gate/scopes.js";
import { malformedRequest, ServiceError } from "../../platform/errors/catalogue.js";
import { asConnectError } from "../../platform/errors/domain.js";
import type { Logger } from "../../platform/logger.js";
import type { ObserveCall } from "../../platform/observability/call-observation.js";
import { type NodeRequest, type NodeResponse, readBody, writeHead } from "../../platform/transport/http.js";
import {
  deadlineMs,
  envelope,
  requestMessageBytes,
  type StreamWire,
  streamEnd,
  streamHeaders,
  streamWireOf,
} from "../../platform/transport/rpc-stream-wire.js";
import type { BoardSnapshot } from "../core/board-snapshot.js";
import type { LiveBoards, Subscription } from "../core/live-boards.js";
import { validPeriodQuery, WATCH_PROCEDURE } from "../core/operation.js";
import { topWagerEntries } from "./codecs/entries-message.js";
import { requestFields } from "./codecs/period-request-message.js";
import type { BoardSignatures, SignedBoard, SignedBoardOf } from "./parts/board-signatures.js";
import {
  type Frames,
  liveError,
  ResponseViewer,
  revokedKey,
  type StreamViewer,
  shuttingDown,
} from "./parts/live-streams.js";
import { SignedBoardViewer } from "./parts/signed-board-viewer.js";

export const WATCH_PATH = `/${WATCH_PROCEDURE}`;

export interface WatchRpcOptions {
  readonly admission: Admission;
  readonly live: LiveBoards;
  readonly maxBodyBytes: number;
  /** The client's address for the per-address stream limit. */
  readonly clientAddress: (req: NodeRequest) => string;
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
  /** Signs board versions for requests that ask (`signed`); absent: the field is ignored. */
  readonly signatures?: BoardSignatures;
}

type BoardMessage = ReturnType<typeof create<typeof WatchTopAffiliateWagersByPeriodResponseSchema>>;

function boardMessage(snapshot: BoardSnapshot, heartbeat: boolean): BoardMessage {
  return create(WatchTopAffiliateWagersByPeriodResponseSchema, {
    data: heartbeat ? [] : topWagerEntries(snapshot.ranked),
    version: snapshot.version,
    asOf: BigInt(snapshot.asOf),
    heartbeat,
  });
}

/** One message enveloped in the stream's codec. */
function framed(message: BoardMessage, binary: boolean): Buffer {
  return binary
    ? envelope(toBinary(WatchTopAffiliateWagersByPeriodResponseSchema, message))
    : envelope(Buffer.from(toJsonString(WatchTopAffiliateWagersByPeriodResponseSchema, message), "utf8"));
}

const binary = (heartbeat: boolean) => (snapshot: BoardSnapshot) => framed(boardMessage(snapshot, heartbeat), true);
const json = (heartbeat: boolean) => (snapshot: BoardSnapshot) => framed(boardMessage(snapshot, heartbeat), false);

/** The enveloped messages are the same on the three protocols: one encoding per codec. */
const BINARY_FRAMES: Frames = { board: binary(false), heartbeat: binary(true) };
const JSON_FRAMES: Frames = { board: json(false), heartbeat: json(true) };

export class WatchRpc {
  /** Each snapshot's signed board frames (binary, JSON), made once for all its signed viewers. */
  private readonly signedFrames = new WeakMap<BoardSnapshot, Map<boolean, Promise<Buffer>>>();

  constructor(private readonly options: WatchRpcOptions) {}

  /** The watch procedure's path, a POST, in a content type of the three protocols. */
  matches(req: NodeRequest, path: string): boolean {
    return path === WATCH_PATH && req.method === "POST" && streamWireOf(req.headers["content-type"]) !== undefined;
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const startedAt = process.hrtime.bigint();
    const wire = streamWireOf(req.headers["content-type"]) as StreamWire;
    let headers: Record<string, string> = streamHeaders(wire);
    let failure: unknown;
    let address: string | undefined;
    let keyId: string | undefined;
    try {
      const deadline = deadlineMs(wire, req.headers);
      address = this.options.clientAddress(req);
      const admitted = await this.options.admission.admitBearer(req.headers.authorization, address);
      keyId = admitted.caller.keyId;
      headers = { ...headers, ...admitted.headers };
      requireScope(admitted.caller, "boards:read");
      const request = await this.readRequest(wire, req);
      const fields = requestFields(request);
      const query = validPeriodQuery(fields.values, fields.violations, admitted.caller.defaultRankBy);
      const board = {
        affiliateId: admitted.caller.affiliateId,
        start: query.start,
        end: query.end,
        rankBy: query.rankBy ?? "wagered",
      };
      const viewer = this.viewerOf(res, wire, headers, request.signed === true ? board : undefined);
      const subscription = await this.options.live
        .open(
          { affiliateId: admitted.caller.affiliateId, ...query },
          { keyId: admitted.caller.keyId, address, scope: "boards:read" },
          viewer,
          request.resumeVersion,
        )
        .catch((error: unknown) => {
          throw liveError(error);
        });
      viewer.flush();
      closeWithTheStream(res, wire, subscription, viewer, deadline);
    } catch (reason) {
      failure = reason;
      if (!res.headersSent) writeHead(res, 200, headers);
      endStream(res, wire, asConnectError(reason));
    } finally {
      this.options.observe?.(WATCH_PROCEDURE, wire.protocol, startedAt, failure, { keyId, clientAddress: address });
    }
  }

  /** The stream's viewer: plain frames, or (`signed`: the board the frames are of) each with its signature. */
  private viewerOf(
    res: NodeResponse,
    wire: StreamWire,
    headers: Record<string, string>,
    signed: SignedBoardOf | undefined,
  ): StreamViewer {
    const frames = wire.binary ? BINARY_FRAMES : JSON_FRAMES;
    const stream = {
      protocol: wire.protocol,
      begin: () => writeHead(res, 200, headers),
      finish: (reason: "shutdown" | "revoked") =>
        endStream(res, wire, reason === "revoked" ? revokedKey() : shuttingDown()),
    };
    const { signatures } = this.options;
    if (signed === undefined || signatures === undefined) return new ResponseViewer(res, { ...stream, frames });
    return new SignedBoardViewer(res, {
      ...stream,
      frame: (snapshot) => this.signedFrame(signatures, snapshot, signed, wire.binary),
      heartbeat: (snapshot) => snapshot.encoded(frames.heartbeat),
    });
  }

  /** A snapshot's board message with its version's signature, enveloped once per snapshot and codec. */
  private signedFrame(
    signatures: BoardSignatures,
    snapshot: BoardSnapshot,
    board: SignedBoardOf,
    binary: boolean,
  ): Promise<Buffer> {
    let frames = this.signedFrames.get(snapshot);
    if (frames === undefined) {
      frames = new Map();
      this.signedFrames.set(snapshot, frames);
    }
    let frame = frames.get(binary);
    if (frame === undefined) {
      const version = { key: snapshot, ranked: snapshot.ranked, version: snapshot.version };
      frame = signatures
        .signed(version, board)
        .then((signed) => framed(withSignature(boardMessage(snapshot, false), signed), binary));
      frames.set(binary, frame);
      frame.catch(() => frames.delete(binary));
    }
    return frame;
  }

  private async readRequest(wire: StreamWire, req: NodeRequest): Promise<WatchTopAffiliateWagersByPeriodRequest> {
    const max = this.options.maxBodyBytes;
    const body = await readBody(
      req,
      max,
      () => new ConnectError(`request message is larger than ${max} bytes`, Code.ResourceExhausted),
    );
    const bytes = await requestMessageBytes(wire, req.headers, body);
    try {
      return wire.binary
        ? fromBinary(WatchTopAffiliateWagersByPeriodRequestSchema, bytes)
        : fromJsonString(WatchTopAffiliateWagersByPeriodRequestSchema, bytes.toString("utf8"), {
            ignoreUnknownFields: true,
          });
    } catch {
      throw malformedRequest(
        wire.binary
          ? "the request message is not valid protobuf binary"
          : "the request message is not valid proto JSON",
      );
    }
  }
}

/** Ends a stream (headers already written) with an error, or success without one. */
function endStream(res: NodeResponse, wire: StreamWire, error: ConnectError | undefined): void {
  if (res.writableEnded) return;
  const end = streamEnd(wire, error);
  if (end.trailers !== undefined) res.addTrailers(end.trailers);
  if (end.body === undefined) res.end();
  else res.end(end.body);
}

function withSignature(message: BoardMessage, signed: SignedBoard | null): BoardMessage {
  if (signed !== null)
    message.signed = create(SignedBoardSchema, { payload: signed.payload, kid: signed.kid, jws: signed.jws });
  return message;
}

/** Ends the subscription with the stream: when the connection closes, or at the call's deadline. */
function closeWithTheStream(
  res: NodeResponse,
  wire: StreamWire,
  subscription: Subscription,
  viewer: StreamViewer,
  deadline: number | undefined,
): void {
  let timer: NodeJS.Timeout | undefined;
  if (deadline !== undefined) {
    timer = setTimeout(() => {
      subscription.close();
      endStream(res, wire, new ServiceError("DEADLINE_EXCEEDED", "the stream's deadline passed"));
    }, deadline);
    timer.unref();
  }
  if (viewer.gone) subscription.close();
  else
    res.once("close", () => {
      clearTimeout(timer);
      subscription.close();
    });
}
