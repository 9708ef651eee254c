/**
 * When a failed delivery is tried again: the spec's schedule (values/webhook-events.ts) with jitter,
 * scaled by WEBHOOK_RETRY_SCALE (1 in production; tests shrink hours to milliseconds), and never
 * sooner than the receiver's Retry-After.
 */
import { WEBHOOK_RETRY_DELAYS_S } from "../../values/webhook-events.js";

/** Retry-After is honoured up to a day; a larger value is read as a day. */
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** An endpoint whose every attempt failed for this long (scaled like the schedule) is disabled. */
export const FAILING_ENDPOINT_DISABLE_MS = 5 * 24 * 3600 * 1000;

/**
 * Milliseconds to wait after the `attempt`-th attempt (1-based) failed, or undefined when it was the
 * last of the schedule. Jitter: ±10 % of the delay (`random` in [0, 1)), so endpoints that failed
 * together are not retried in lockstep.
 */
export function retryDelayMs(attempt: number, scale: number, random: number = Math.random()): number | undefined {
  const seconds = WEBHOOK_RETRY_DELAYS_S[attempt - 1];
  if (seconds === undefined) return undefined;
  const base = seconds * 1000 * scale;
  return Math.max(0, Math.round(base * (0.9 + 0.2 * random)));
}

/**
 * A Retry-After header as milliseconds from `nowMs`: delay-seconds or an HTTP date; undefined when
 * absent or unreadable; capped at a day.
 */
export function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const date = Date.parse(text);
    if (Number.isNaN(date)) return undefined;
    ms = Math.max(0, date - nowMs);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}
