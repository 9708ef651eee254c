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
 */
import type { Admission } from "../auth/admission.js";
import { raceJson } from "../codecs/race-json.js";
import { HttpRefusal } from "../errors/catalogue.js";
import type { HeldStream } from "../leaderboard/live-boards.js";
import type { ViewerOwner } from "../leaderboard/stream-quota.js";
import type { Logger } from "../logger.js";
import type { ObserveCall } from "../observability/call-observation.js";
import { RaceNotWatchable, type RaceViewer, type RaceWatch } from "../races/race-watch.js";
import type { RaceView } from "../races/races.js";
import { nodeExchange } from "../transport/exchange.js";
import { type NodeRequest, type NodeResponse, writeHead } from "../transport/http.js";
import { liveError, StreamResponse, type StreamSlots } from "./parts/live-streams.js";
import { answer, requireRaceScope } from "./parts/race-answers.js";
import { refuse } from "./parts/rest-reply.js";

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

export interface RaceEventsOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly watch: RaceWatch;
  /** Race streams count with the boards' against STREAM_LIMIT_PER_KEY, _PER_ADDRESS and STREAM_LIMIT. */
  readonly slots: StreamSlots;
  readonly clientAddress: (req: NodeRequest) => string;
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
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
    const viewer = new RaceResponseViewer(res, () => beginEventStream(res, admitted.headers));
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

/** One SSE response: the race's events and heartbeats (StreamResponse: headers once, a slow reader cut). */
class RaceResponseViewer implements RaceViewer {
  readonly protocol = "sse";
  private readonly stream: StreamResponse;

  constructor(res: NodeResponse, begin: () => void) {
    this.stream = new StreamResponse(res, { begin, finish: () => res.end() });
  }

  get gone(): boolean {
    return this.stream.gone;
  }

  flush(): void {
    this.stream.flush();
  }

  race(view: RaceView, version: string): boolean {
    return this.stream.write(eventOf(view, version));
  }

  heartbeat(): boolean {
    return this.stream.write(HEARTBEAT);
  }

  /** `revoked`: the key may no longer read the race (see LiveBoards.endKeyStreams); the stream simply ends. */
  end(reason: "slow" | "shutdown" | "revoked"): void {
    this.stream.end(reason);
  }
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
