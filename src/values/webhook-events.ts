/**
 * The outgoing webhook events (Standard Webhooks, docs/webhooks.md): their types and the body every
 * one of them is sent as, `{"type","timestamp","data"}`. The body is made once, when the event is
 * written to the outbox, and stored as bytes: every attempt and every redelivery sends the same bytes.
 */

/** Every event type an endpoint may subscribe to. `webhook.test` is only sent by SendTestEvent. */
export const WEBHOOK_EVENT_TYPES = [
  "race.started",
  "race.ended",
  "race.finalized",
  "race.cancelled",
  "webhook.test",
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: unknown): value is WebhookEventType {
  return typeof value === "string" && (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/** The spec asks for small bodies: a body must stay under 20 KB (20,480 bytes of UTF-8). */
export const MAX_WEBHOOK_BODY_BYTES = 20 * 1024;

/** Event times are Unix seconds; a value above this looks like milliseconds and is refused. */
const LARGEST_SECONDS = 1e11;

/**
 * The body of an event: `timestamp` is the time of the state change as an RFC 3339 UTC string (the
 * spec's example format), `at` in Unix seconds. Throws when the body would reach 20 KB, or `at` is
 * not a plausible time in seconds: both are faults of the caller, never of the receiver.
 */
export function webhookBody(type: WebhookEventType, at: number, data: unknown): string {
  if (!Number.isFinite(at) || at < 0 || at >= LARGEST_SECONDS) {
    throw new Error(`webhook event time must be Unix seconds, got ${at}`);
  }
  const body = JSON.stringify({ type, timestamp: new Date(at * 1000).toISOString(), data: data ?? null });
  const bytes = Buffer.byteLength(body, "utf8");
  if (bytes >= MAX_WEBHOOK_BODY_BYTES) {
    throw new Error(`webhook event ${type} is ${bytes} bytes; a body must stay under ${MAX_WEBHOOK_BODY_BYTES}`);
  }
  return body;
}

/**
 * The spec's retry schedule: after the first attempt fails, the next ones come this many seconds
 * later (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h), each with jitter. Ten attempts in
 * all, over about three and a half days; then the delivery is failed and stays for replay.
 */
export const WEBHOOK_RETRY_DELAYS_S: readonly number[] = [
  5,
  5 * 60,
  30 * 60,
  2 * 3600,
  5 * 3600,
  10 * 3600,
  14 * 3600,
  20 * 3600,
  24 * 3600,
];

/** Attempts of one delivery before it is failed: the first and one per retry. */
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_DELAYS_S.length + 1;
