/**
 * The viewers of `npm run bench -- fleet`, in their own process (bench/fleet.ts starts as many as the
 * file-descriptor limit needs, each under a raised limit): SSE over HTTP/1.1, one TCP connection per viewer, each
 * to the instance and board its plan names. Every board carries its affiliate's pacer user, whose total minus the
 * board's base says how many bench batches that board shows; each viewer times the arrival of every count it
 * sees for the first time, and keeps the last board it received, so the parent can compare it with a fresh POST
 * once the load stops ("finals", asked for as often as the parent checks). Talks to the parent over IPC only.
 */

import { noteArrivals } from "./arrivals.js";
import { rawSseStream } from "./raw-sse.js";

export interface FleetBoardPlan {
  /** `/top-affiliate-wagers-by-period/stream?...` */
  readonly streamPath: string;
  readonly key: string;
  /** The pacer's username on this board, and its total when the run started (a whole number). */
  readonly pacer: string;
  readonly base: number;
}

export interface FleetViewersPlan {
  readonly boards: readonly FleetBoardPlan[];
  /** One entry per viewer of this process: which board, on which instance (a public base URL). */
  readonly viewers: readonly { readonly board: number; readonly baseUrl: string }[];
  readonly openPerSecond: number;
}

export type FromFleetViewers =
  | { type: "ready"; open: number; failed: number }
  | { type: "report"; report: FleetViewersReport }
  | { type: "finals"; finals: Finals };

/** By board: the last board each viewer received (its SSE data line), and how many viewers show it now. */
export type Finals = Record<string, Record<string, number>>;

export interface FleetViewersReport {
  /** By board, then pacer count: arrival times (ms, performance.timeOrigin-based), one per viewer that saw it. */
  readonly arrivals: Record<string, Record<string, number[]>>;
  readonly messages: number;
  /** Streams that ended or failed after their first board. */
  readonly ended: number;
}

const now = () => performance.timeOrigin + performance.now();

const arrivals = new Map<number, Map<number, number[]>>();
/** The pacer count of a board's data line, read once per board and distinct line. */
const countOf = new Map<string, number>();
let messages = 0;
let ended = 0;

class Viewer {
  last = -1;
  data = "";
  open = true;
  constructor(
    readonly board: number,
    readonly plan: FleetBoardPlan,
  ) {}

  received(data: string): void {
    messages += 1;
    this.data = data;
    const cacheKey = `${this.board}:${data}`;
    let count = countOf.get(cacheKey);
    if (count === undefined) {
      const at = data.indexOf(`"username":"${this.plan.pacer}"`);
      const total = at < 0 ? undefined : /"totalWagered":(\d+)/.exec(data.slice(at));
      count = total === undefined || total === null ? -1 : Number(total[1]) - this.plan.base;
      if (countOf.size > 200_000) countOf.clear();
      countOf.set(cacheKey, count);
    }
    if (count < 0) return;
    const at = now();
    if (this.last >= 0) noteArrivals(arrivals, this.board, this.last, count, at);
    if (count > this.last) this.last = count;
  }
}

function watch(viewer: Viewer, baseUrl: string, onFirst: (ok: boolean) => void): void {
  let first = true;
  let text = "";
  const onHead = (ok: boolean) => {
    if (ok) return;
    first = false;
    onFirst(false);
  };
  const socket = rawSseStream(baseUrl, viewer.plan.streamPath, viewer.plan.key, onHead, (piece) => {
    text += piece;
    for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      if (!block.startsWith("event: board")) continue;
      const dataAt = block.indexOf("\ndata: ");
      if (dataAt < 0) continue;
      viewer.received(block.slice(dataAt + 7));
      if (first) {
        first = false;
        onFirst(true);
      }
    }
  });
  socket.on("close", () => {
    viewer.open = false;
    if (first) {
      first = false;
      onFirst(false);
    } else ended += 1;
  });
  socket.on("error", () => undefined);
}

async function main(): Promise<void> {
  // The plan comes over IPC: for hundreds of boards it is too large for an environment variable.
  const plan = await new Promise<FleetViewersPlan>((resolve) => {
    const onPlan = (message: { type: string; plan?: FleetViewersPlan }) => {
      if (message.type !== "plan" || message.plan === undefined) return;
      process.off("message", onPlan);
      resolve(message.plan);
    };
    process.on("message", onPlan);
  });
  const viewers: Viewer[] = [];
  let open = 0;
  let failed = 0;
  await new Promise<void>((resolve) => {
    if (plan.viewers.length === 0) resolve();
    let settled = 0;
    const onFirst = (ok: boolean) => {
      if (ok) open += 1;
      else failed += 1;
      settled += 1;
      if (settled === plan.viewers.length) resolve();
    };
    const batch = Math.max(1, Math.round(plan.openPerSecond / 20));
    let next = 0;
    const timer = setInterval(() => {
      for (let n = 0; n < batch && next < plan.viewers.length; n++, next++) {
        const { board, baseUrl } = plan.viewers[next] as { board: number; baseUrl: string };
        const viewer = new Viewer(board, plan.boards[board] as FleetBoardPlan);
        viewers.push(viewer);
        watch(viewer, baseUrl, onFirst);
      }
      if (next >= plan.viewers.length) clearInterval(timer);
    }, 50);
  });
  process.send?.({ type: "ready", open, failed } satisfies FromFleetViewers);
  process.on("message", (message: { type: string }) => {
    if (message.type === "finals") {
      const finals: Finals = {};
      for (const viewer of viewers) {
        if (viewer.data === "") continue;
        const byData = finals[viewer.board] ?? {};
        finals[viewer.board] = byData;
        byData[viewer.data] = (byData[viewer.data] ?? 0) + 1;
      }
      process.send?.({ type: "finals", finals } satisfies FromFleetViewers);
      return;
    }
    if (message.type !== "report") return;
    const out: FleetViewersReport["arrivals"] = {};
    for (const [board, byCount] of arrivals) {
      const counts: Record<string, number[]> = {};
      for (const [k, list] of byCount) counts[k] = list;
      out[board] = counts;
    }
    process.send?.({
      type: "report",
      report: { arrivals: out, messages, ended },
    } satisfies FromFleetViewers);
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`fleet viewers failed: ${String(error)}\n`);
  process.exit(1);
});
