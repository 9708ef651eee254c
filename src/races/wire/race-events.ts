/**
 * The live race for browsers and overlays: `GET {BASE_PATH}/races/{slug-or-id}/stream` answers
 * `text/event-stream` (Server-Sent Events) on HTTP/1.1 and h2c.
 *
 * The stream starts with `retry: 2000`; each change is `event: race`, `id: <version>`,
 * `data: <GET /races/{slug}'s success envelope on one line>`; a heartbeat is the comment
 * `: heartbeat`. `Last-Event-ID` resumes: nothing is sent until the race changes from that
 * version. A slug follows its series on to the next race. Admission is the race reads' (a
 * publishable key may come as `?key=`; the key needs `races:read`); refusals are their JSON
 * envelope with its statuses (401, 403, 404, 405, 429, 503), never an event stream.
 *
 * `signed=true` adds each version's signature to its event (`"signed"` after `"errors"`, over
 * races/core/live-race-payload.ts), signed once per version however many viewers ask
 * (../../signing/core/version-signatures.ts); without it the events are exactly as before.
 */

import type { HeldStream } from "../../boards/core/live-boards.js";
import type { ViewerOwner } from "../../boards/core/stream-quota.js";
import { liveError, StreamResponse, type StreamSlots } from "../../boards/wire/parts/live-streams.js";
import type { Admission } from "../../keys/gate/admission.js";
import { HttpRefusal } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import type { ObserveCall } from "../../platform/observability/call-observation.js";
import { nodeExchange } from "../../platform/transport/exchange.js";
import { type NodeRequest, type NodeResponse, writeHead } from "../../platform/transport/http.js";
import { refuse } from "../../platform/wire/parts/rest-reply.js";
import type { VersionSignatures } from "../../signing/core/version-signatures.js";
import { liveRacePayload } from "../core/live-race-payload.js";
import { RaceNotWatchable, type RaceViewer, type RaceWatch } from "../core/race-watch.js";
import type { RaceView } from "../core/races.js";
import { raceJson } from "./codecs/race-json.js";
import { answer, requireRaceScope } from "./parts/race-answers.js";

export const WATCH_RACE_PROCEDURE = "topwagers.v1.RaceService/WatchRace";

const RECONNECT_MS = 2000;
const PREAMBLE = Buffer.from(`retry: ${RECONNECT_MS}\n\n`, "utf8");
const HEARTBEAT = Buffer.from(": heartbeat\n\n", "utf8");

/** Each race answer is encoded once, whatever the number of viewers it goes to. */
const encoded = new WeakMap<RaceView, Buffer>();
function eventOf(view: RaceView, version: string): Buffer {
  let bytes = encoded.get(view);
  if (bytes === undefined) {
    bytes = Buffer.from(`event: race\nid: ${version}\ndata: {"data":${raceJson(view, version)},"errors":null}\n\n`);
    encoded.set(view, bytes);
  }
  return bytes;
}

/** Each race answer's signed event, made once for every viewer that asked (its signature once per version). */
const encodedSigned = new WeakMap<RaceView, Promise<Buffer>>();
function signedEventOf(signatures: VersionSignatures, view: RaceView, version: string): Promise<Buffer> {
  let bytes = encodedSigned.get(view);
  if (bytes === undefined) {
    const payload = () => liveRacePayload(view, version, Math.floor(Date.now() / 1000));
    bytes = signatures.signedJson(`${view.race.id}/${version}`, payload).then((signed) => {
      const data = `{"data":${raceJson(view, version)},"errors":null,"signed":${signed}}`;
      return Buffer.from(`event: race\nid: ${version}\ndata: ${data}\n\n`);
    });
    encodedSigned.set(view, bytes);
    // A failed signing is not kept: the next viewer of this answer tries again.
    bytes.catch(() => encodedSigned.delete(view));
  }
  return bytes;
}

export interface RaceEventsOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly watch: RaceWatch;
  /** Race streams count with the boards' against STREAM_LIMIT_PER_KEY, _PER_ADDRESS and STREAM_LIMIT. */
  readonly slots: StreamSlots;
  readonly clientAddress: (req: NodeRequest) => string;
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
  /** Signs race versions for viewers that ask (`signed=true`); absent: the parameter is ignored. */
  readonly signatures?: VersionSignatures;
}

export class RaceEvents {
  private readonly prefix: string;

  constructor(private readonly options: RaceEventsOptions) {
    this.prefix = `${options.basePath}/races/`;
  }

  /** `{BASE_PATH}/races/<one segment>/stream` */
  matches(path: string): boolean {
    if (!path.startsWith(this.prefix) || !path.endsWith("/stream")) return false;
    const segment = path.slice(this.prefix.length, -"/stream".length);
    return segment !== "" && !segment.includes("/");
  }

  async handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void> {
    const startedAt = process.hrtime.bigint();
    const call: StreamCall = { rateHeaders: {}, address: undefined, keyId: undefined };
    let failure: unknown;
    try {
      await this.open(req, res, path, call);
    } catch (reason) {
      failure = reason;
      await refuse(nodeExchange(req, res), reason, call.rateHeaders, this.options.logger);
    } finally {
      this.options.observe?.(WATCH_RACE_PROCEDURE, "sse", startedAt, failure, {
        keyId: call.keyId,
        clientAddress: call.address,
        path: `${this.prefix}{slug}/stream`,
      });
    }
  }

  /**
   * Admits the request (a key in the header, or a publishable one as `?key=`, with races:read), holds a
   * stream slot and subscribes the response to the race from `Last-Event-ID`'s version. Throws to refuse.
   */
  private async open(req: NodeRequest, res: NodeResponse, path: string, call: StreamCall): Promise<void> {
    if (req.method !== "GET") {
      throw new HttpRefusal("METHOD_NOT_ALLOWED", `use GET for ${this.prefix}{slug}/stream`, { allow: "GET" });
    }
    const address = this.options.clientAddress(req);
    call.address = address;
    const url = req.url ?? "";
    const params = new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "");
    const admitted = await this.options.admission.admitWithUrlKey(req.headers, params.get("key"), address);
    call.keyId = admitted.caller.keyId;
    call.rateHeaders = admitted.headers;
    requireRaceScope(admitted.caller, "races:read");
    const idOrSlug = decodeSegment(path.slice(this.prefix.length, -"/stream".length));
    const signatures = params.get("signed") === "true" ? this.options.signatures : undefined;
    const frame =
      signatures === undefined
        ? eventOf
        : (view: RaceView, version: string) => signedEventOf(signatures, view, version);
    const viewer = new RaceResponseViewer(res, () => beginEventStream(res, admitted.headers), frame);
    const lastEventId = req.headers["last-event-id"];
    let subscription: { close(): void } | undefined;
    let revoked = false;
    const owner = { keyId: admitted.caller.keyId, address, scope: "races:read" } as const;
    const release = this.holdSlot(owner, {
      protocol: "sse",
      end: () => {
        revoked = true;
        subscription?.close();
        viewer.end("revoked");
      },
    });
    subscription = await this.options.watch
      .open(
        admitted.caller.affiliateId,
        idOrSlug,
        viewer,
        typeof lastEventId === "string" && lastEventId !== "" ? lastEventId : undefined,
      )
      .catch((error: unknown) => {
        release();
        if (error instanceof RaceNotWatchable) answer(error.outcome, "", "slug");
        throw error;
      });
    const opened = subscription;
    const close = () => {
      opened.close();
      release();
    };
    viewer.flush();
    if (viewer.gone || revoked) close();
    else res.once("close", close);
  }

  /** A stream slot for the key and address, counted against the stream limits; returns its release. */
  private holdSlot(owner: ViewerOwner, stream: HeldStream): () => void {
    try {
      return this.options.slots.hold(owner, stream);
    } catch (error) {
      throw liveError(error);
    }
  }
}

/** What a stream call has learnt so far, for its refusal and its call record. */
interface StreamCall {
  rateHeaders: Readonly<Record<string, string>>;
  address: string | undefined;
  keyId: string | undefined;
}

/** The event stream's headers (with the key's rate headers) and its preamble. */
function beginEventStream(res: NodeResponse, rateHeaders: Readonly<Record<string, string>>): void {
  writeHead(res, 200, {
    ...rateHeaders,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-accel-buffering": "no",
  });
  res.write(PREAMBLE);
}

/**
 * One SSE response: the race's events and heartbeats (StreamResponse: headers once, a slow reader cut). A
 * signed event may still be signing when the race comes: then what follows waits for it, so every event and
 * heartbeat goes out in the order it came.
 */
class RaceResponseViewer implements RaceViewer {
  readonly protocol = "sse";
  private readonly stream: StreamResponse;
  /** The writes waiting for a signature, in order; `waiting` counts them (0: write at once). */
  private queue: Promise<unknown> = Promise.resolve();
  private waiting = 0;

  constructor(
    res: NodeResponse,
    begin: () => void,
    private readonly frame: (view: RaceView, version: string) => Buffer | Promise<Buffer>,
  ) {
    this.stream = new StreamResponse(res, { begin, finish: () => res.end() });
  }

  get gone(): boolean {
    return this.stream.gone;
  }

  flush(): void {
    this.stream.flush();
  }

  race(view: RaceView, version: string): boolean {
    const frame = this.frame(view, version);
    if (Buffer.isBuffer(frame) && this.waiting === 0) return this.stream.write(frame);
    // A version that could not be signed is skipped: the next change brings the next one.
    this.afterWaiting(async () => this.written(await Promise.resolve(frame).catch(() => undefined)));
    return true;
  }

  heartbeat(): boolean {
    if (this.waiting === 0) return this.stream.write(HEARTBEAT);
    this.afterWaiting(() => this.written(HEARTBEAT));
    return true;
  }

  /** `revoked`: the key may no longer read the race (see LiveBoards.endKeyStreams); the stream simply ends. */
  end(reason: "slow" | "shutdown" | "revoked"): void {
    if (this.waiting === 0) this.stream.end(reason);
    else this.afterWaiting(() => this.stream.end(reason));
  }

  private written(bytes: Buffer | undefined): void {
    if (bytes !== undefined && !this.stream.write(bytes)) this.stream.end("slow");
  }

  private afterWaiting(step: () => unknown): void {
    this.waiting += 1;
    this.queue = this.queue
      .then(step)
      .catch(() => undefined)
      .finally(() => {
        this.waiting -= 1;
      });
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
