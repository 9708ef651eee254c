/**
 * What the stream skins (SSE and the watch RPC) share: a viewer that writes
 * a board's pre-encoded bytes to one response and reports a connection that
 * does not drain, and the live-board refusals as the catalogue's errors.
 */
import { ServiceError } from "../../../platform/errors/catalogue.js";
import { cutResponse, type NodeResponse } from "../../../platform/transport/http.js";
import type { BoardSnapshot } from "../../core/board-snapshot.js";
import type { EndReason, Viewer } from "../../core/live-board.js";
import { type HeldStream, LiveShutdownError } from "../../core/live-boards.js";
import { StreamLimitError, type ViewerOwner } from "../../core/stream-quota.js";

/**
 * A viewer whose response holds more than this unsent (in the process and its socket) when the
 * next message is due is too slow: it is disconnected, so nothing is buffered without bound.
 */
export const MAX_UNSENT_BYTES = 256 * 1024;

/** A stream refused with resource_exhausted waits this long before trying again. */
const STREAM_RETRY_SECONDS = 5;

/** How long a stream ended by shutdown may take to send its last bytes before its connection is cut. */
const SHUTDOWN_GRACE_MS = 1_000;

export const SHUTTING_DOWN_MESSAGE = "server is shutting down, reconnect";

/** A live-board refusal as the catalogue's error (other errors pass unchanged). */
export function liveError(error: unknown): unknown {
  if (error instanceof StreamLimitError) {
    if (error.scope === "instance") {
      return new ServiceError(
        "INSTANCE_FULL",
        `this instance holds its maximum of ${error.limit} streams. Connect to another instance`,
        { retryAfterSeconds: 1 },
      );
    }
    const whose = error.scope === "key" ? "this API key" : "this client address";
    return new ServiceError("TOO_MANY_STREAMS", `${whose} has ${error.limit} streams open, the most allowed`, {
      retryAfterSeconds: STREAM_RETRY_SECONDS,
    });
  }
  if (error instanceof LiveShutdownError) return shuttingDown();
  return error;
}

/** How a stream of a key revoked while it was open ends (as a call with that key now would). */
export function revokedKey(): ServiceError {
  return new ServiceError("UNAUTHENTICATED", "the API key of this stream was revoked or has expired");
}

export function shuttingDown(): ServiceError {
  return new ServiceError("SHUTTING_DOWN", SHUTTING_DOWN_MESSAGE, { retryAfterSeconds: 1 });
}

/**
 * Stream slots under the instance's stream limits (the live boards' `hold`), for streams served elsewhere: each
 * counted by protocol and ended (`end("revoked")`) with the key's other streams when the key may no longer
 * read it.
 */
export interface StreamSlots {
  hold(owner: ViewerOwner, stream: HeldStream): () => void;
}

/** How one protocol frames a board and a heartbeat (each called once per snapshot, see BoardSnapshot.encoded). */
export interface Frames {
  board(snapshot: BoardSnapshot): Buffer;
  heartbeat(snapshot: BoardSnapshot): Buffer;
}

export interface StreamResponseOptions {
  /** Writes the response headers and any preamble; called once, before the first frame. */
  readonly begin: () => void;
  /** Ends the stream cleanly: the server stops, or the key was revoked (the protocol's way to say which). */
  readonly finish: (reason: "shutdown" | "revoked") => void;
  readonly maxUnsentBytes?: number;
}

/**
 * One streamed HTTP response (HTTP/1.1 or HTTP/2), for every stream skin: the headers and preamble once, before
 * the first frame; frames while the connection drains (false when it holds too much unsent); a clean end, or a cut
 * for a reader that does not read.
 */
export class StreamResponse {
  private begun = false;
  private closed = false;

  constructor(
    private readonly res: NodeResponse,
    private readonly options: StreamResponseOptions,
  ) {
    res.once("close", () => {
      this.closed = true;
    });
  }

  /** Whether the connection is gone (or the stream ended). */
  get gone(): boolean {
    return this.closed || this.res.writableEnded;
  }

  /** Sends the headers now if nothing was written yet (a resumed stream starts with nothing to send). */
  flush(): void {
    if (this.begun || this.gone) return;
    this.begin();
    (this.res as import("node:http").ServerResponse).flushHeaders();
  }

  /** Writes one frame; false when the connection does not drain. */
  write(bytes: Buffer): boolean {
    // A closed connection is taken off its stream by its close handler.
    if (this.gone) return true;
    if (this.res.writableLength > (this.options.maxUnsentBytes ?? MAX_UNSENT_BYTES)) return false;
    this.begin();
    this.res.write(bytes);
    return true;
  }

  end(reason: EndReason): void {
    if (this.gone) return;
    if (reason === "slow") {
      // Nothing more reaches a viewer that does not read.
      cutResponse(this.res);
      return;
    }
    this.begin();
    this.options.finish(reason);
    // A connection that cannot take the last bytes must not hold shutdown up.
    if (!this.res.writableFinished) setTimeout(() => cutResponse(this.res), SHUTDOWN_GRACE_MS).unref();
  }

  private begin(): void {
    if (this.begun) return;
    this.begun = true;
    this.options.begin();
  }
}

/** What every live board's viewer on one HTTP response has: its protocol and its response. */
export abstract class StreamViewer implements Viewer {
  readonly protocol: string;
  protected readonly stream: StreamResponse;

  constructor(res: NodeResponse, options: StreamResponseOptions & { readonly protocol: string }) {
    this.protocol = options.protocol;
    this.stream = new StreamResponse(res, options);
  }

  /** Whether the connection is gone (or the stream ended). */
  get gone(): boolean {
    return this.stream.gone;
  }

  /** Sends the headers now if nothing was written yet (a resumed stream starts with no board). */
  flush(): void {
    this.stream.flush();
  }

  abstract board(snapshot: BoardSnapshot): boolean;
  abstract heartbeat(snapshot: BoardSnapshot): boolean;
  abstract end(reason: EndReason): void;
}

export interface ResponseViewerOptions extends StreamResponseOptions {
  readonly protocol: string;
  readonly frames: Frames;
}

/** A live board's viewer on one HTTP response: each snapshot's bytes, encoded once for all viewers. */
export class ResponseViewer extends StreamViewer {
  constructor(
    res: NodeResponse,
    private readonly options: ResponseViewerOptions,
  ) {
    super(res, options);
  }

  board(snapshot: BoardSnapshot): boolean {
    return this.stream.write(snapshot.encoded(this.options.frames.board));
  }

  heartbeat(snapshot: BoardSnapshot): boolean {
    return this.stream.write(snapshot.encoded(this.options.frames.heartbeat));
  }

  end(reason: EndReason): void {
    this.stream.end(reason);
  }
}
