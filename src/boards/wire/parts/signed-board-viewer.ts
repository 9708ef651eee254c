/**
 * A live board's viewer that asked for signed boards (`signed=true`): each snapshot's frame waits for the
 * snapshot's one signature (./board-signatures.ts), so frames (heartbeats too) go out in the order the boards
 * came, and a connection that does not drain is cut as ResponseViewer cuts it. The SSE stream and the watch RPC
 * use it.
 */

import type { NodeResponse } from "../../../platform/transport/http.js";
import type { BoardSnapshot } from "../../core/board-snapshot.js";
import type { EndReason } from "../../core/live-board.js";
import { type StreamResponseOptions, StreamViewer } from "./live-streams.js";

export interface SignedViewerOptions extends StreamResponseOptions {
  readonly protocol: string;
  /** The snapshot's signed frame (the same bytes for every viewer of its format). */
  readonly frame: (snapshot: BoardSnapshot) => Promise<Buffer>;
  /** The heartbeat's bytes for the board it repeats (the same bytes for every viewer of its format). */
  readonly heartbeat: (snapshot: BoardSnapshot) => Buffer;
}

export class SignedBoardViewer extends StreamViewer {
  /** The frames not written yet, in order. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    res: NodeResponse,
    private readonly options: SignedViewerOptions,
  ) {
    super(res, options);
  }

  board(snapshot: BoardSnapshot): boolean {
    const framing = this.options.frame(snapshot);
    this.queue = this.queue.then(async () => {
      const bytes = await framing.catch(() => undefined);
      // A board that could not be signed is skipped: the next change brings the next one.
      if (bytes !== undefined && !this.stream.write(bytes)) this.stream.end("slow");
    });
    return true;
  }

  heartbeat(snapshot: BoardSnapshot): boolean {
    const bytes = this.options.heartbeat(snapshot);
    // After the boards not written yet: a heartbeat never overtakes the board it repeats.
    this.queue = this.queue.then(() => {
      if (!this.stream.write(bytes)) this.stream.end("slow");
    });
    return true;
  }

  end(reason: EndReason): void {
    this.queue = this.queue.then(() => this.stream.end(reason));
  }
}
