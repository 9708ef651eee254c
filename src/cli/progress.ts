/**
 * Progress of a long command on stderr. On a terminal: one line redrawn in
 * place with a bar, the rate and the time left. Otherwise (a log file, CI):
 * a plain line every few seconds, so logs stay readable.
 */
import { HOUR } from "../values/calendar.js";

export interface ProgressOptions {
  /** What is being done, e.g. "import wagers.jsonl". */
  readonly label: string;
  /** Total amount of work in the unit `update` reports (bytes, rows…), or undefined when unknown. */
  readonly total?: number;
  /** Name of the counted items, e.g. "lines" or "wagers"; the rate is given in these per second. */
  readonly items: string;
  readonly stream?: NodeJS.WriteStream;
  /** Force one mode; default: redraw when the stream is a terminal. */
  readonly tty?: boolean;
  /** Plain mode: seconds between lines (default 5, or PROGRESS_INTERVAL_S). */
  readonly intervalSeconds?: number;
}

const number = new Intl.NumberFormat("en-US");

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return "?";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / HOUR);
  const m = Math.floor((s % HOUR) / 60);
  const rest = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${rest}` : `${m}:${rest}`;
}

/** The environment variable the CLI's progress lines read (beside the server's SETTINGS, ../platform/config.ts). */
export const PROGRESS_SETTING = "PROGRESS_INTERVAL_S";

export class Progress {
  private readonly stream: NodeJS.WriteStream;
  private readonly tty: boolean;
  private readonly intervalMs: number;
  private readonly startedAt = Date.now();
  private lastDrawAt = 0;
  private done = 0;
  private count = 0;
  private finished = false;

  constructor(private readonly options: ProgressOptions) {
    this.stream = options.stream ?? process.stderr;
    this.tty = options.tty ?? this.stream.isTTY === true;
    const fromEnv = Number(process.env[PROGRESS_SETTING]);
    this.intervalMs = 1000 * (options.intervalSeconds ?? (Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 5));
    this.lastDrawAt = this.startedAt;
  }

  /** `done`: work finished in the total's unit; `count`: items finished (defaults to `done`). */
  update(done: number, count = done): void {
    this.done = done;
    this.count = count;
    const now = Date.now();
    if (now - this.lastDrawAt < (this.tty ? 100 : this.intervalMs)) return;
    this.lastDrawAt = now;
    this.draw(now);
  }

  /** Draws the final state and ends the line; `summary` replaces it when given. */
  finish(summary?: string): void {
    if (this.finished) return;
    this.finished = true;
    const now = Date.now();
    if (summary !== undefined) {
      this.stream.write(this.tty ? `\r\x1b[K${summary}\n` : `${summary}\n`);
      return;
    }
    this.draw(now);
    if (this.tty) this.stream.write("\n");
  }

  private draw(now: number): void {
    const elapsed = (now - this.startedAt) / 1000;
    const rate = elapsed > 0 ? this.count / elapsed : 0;
    const total = this.options.total;
    const fraction = total !== undefined && total > 0 ? Math.min(1, this.done / total) : undefined;
    const eta = fraction !== undefined && fraction > 0 ? (elapsed * (1 - fraction)) / fraction : Number.NaN;
    const parts = [
      this.options.label,
      fraction === undefined ? "" : `${(fraction * 100).toFixed(1)}%`,
      `${number.format(this.count)} ${this.options.items}`,
      `${number.format(Math.round(rate))} ${this.options.items}/s`,
      fraction === undefined ? `${formatDuration(elapsed)} elapsed` : `ETA ${formatDuration(eta)}`,
    ].filter((p) => p !== "");
    if (this.tty) {
      const width = 24;
      const filled = Math.round((fraction ?? 0) * width);
      const bar = fraction === undefined ? "" : `[${"#".repeat(filled)}${".".repeat(width - filled)}] `;
      this.stream.write(`\r\x1b[K${bar}${parts.join("  ")}`);
    } else {
      this.stream.write(`${parts.join(" | ")}\n`);
    }
  }
}
