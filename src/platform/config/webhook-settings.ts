/**
 * The outgoing webhooks' settings: delivery on this instance, private receivers, the key that seals signing
 * secrets at rest (and the previous ones), the retry schedule's scale, time limits and per-affiliate caps.
 */

import type { EnvReader } from "./env-reader.js";

export interface WebhookSettings {
  /** WEBHOOK_DELIVERY=false: this instance sends no webhooks (the others do); default true. */
  readonly delivery: boolean;
  /** true: receivers on private, loopback and link-local addresses, and plain http, are allowed (development, tests). */
  readonly allowPrivateUrls: boolean;
  /** The 32-byte AES-256-GCM key that encrypts signing secrets at rest; undefined: stored unencrypted. */
  readonly secretKey: Buffer | undefined;
  /** WEBHOOK_SECRET_KEY_PREVIOUS: keys that sealed secrets before the current one (they open, never seal). */
  readonly previousSecretKeys?: readonly Buffer[];
  /** Multiplies the retry schedule (5 s … 24 h) and the 5-day disable rule; 1 in production. */
  readonly retryScale: number;
  /** Deadline of one delivery attempt, milliseconds. */
  readonly timeoutMs: number;
  /** How often an idle instance looks for due deliveries, milliseconds. */
  readonly pollMs: number;
  /**
   * Most endpoints one affiliate may have (WEBHOOK_ENDPOINTS_PER_AFFILIATE); a create beyond is refused. It also
   * bounds what one event (a race's state change) fans out to: one delivery per endpoint.
   */
  readonly endpointsPerAffiliate: number;
  /** SendTestEvent and RedeliverWebhook calls per endpoint per minute (WEBHOOK_MANUAL_SENDS_PER_MINUTE). */
  readonly manualSendsPerMinute: number;
}

export function readWebhookSettings(read: EnvReader): WebhookSettings {
  return {
    delivery: read.boolean("WEBHOOK_DELIVERY", true),
    allowPrivateUrls: read.boolean("WEBHOOK_ALLOW_PRIVATE_URLS", false),
    secretKey: webhookSecretKey(read.text("WEBHOOK_SECRET_KEY", ""), read.problems),
    previousSecretKeys: read
      .text("WEBHOOK_SECRET_KEY_PREVIOUS", "")
      .split(",")
      .filter((one) => one.trim() !== "")
      .map((one) => webhookSecretKey(one, read.problems, "each of WEBHOOK_SECRET_KEY_PREVIOUS"))
      .filter((key): key is Buffer => key !== undefined),
    retryScale: positiveFactor("WEBHOOK_RETRY_SCALE", read.text("WEBHOOK_RETRY_SCALE", "1"), read.problems),
    timeoutMs: read.integer("WEBHOOK_TIMEOUT_MS", 15_000, 100, 60_000),
    pollMs: read.integer("WEBHOOK_POLL_MS", 1_000, 10, 60_000),
    endpointsPerAffiliate: read.integer("WEBHOOK_ENDPOINTS_PER_AFFILIATE", 20, 1, 10_000),
    manualSendsPerMinute: read.integer("WEBHOOK_MANUAL_SENDS_PER_MINUTE", 10, 1, 100_000),
  };
}

/** WEBHOOK_SECRET_KEY: 32 bytes as 64 hex digits or base64; "" is no key. Never echoed in a problem. */
export function webhookSecretKey(raw: string, problems: string[], name = "WEBHOOK_SECRET_KEY"): Buffer | undefined {
  const value = raw.trim();
  if (value === "") return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, "hex")
    : /^[A-Za-z0-9+/]{43}=?$/.test(value)
      ? Buffer.from(value, "base64")
      : undefined;
  if (key === undefined || key.length !== 32) {
    problems.push(`${name} must be 32 bytes as 64 hex digits or base64 (use: openssl rand -hex 32)`);
    return undefined;
  }
  return key;
}

/** A factor above 0 and at most 1000, written as a decimal number ("1", "0.001"). */
export function positiveFactor(name: string, raw: string, problems: string[]): number {
  const value = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !(value > 0) || value > 1000) {
    problems.push(`${name} must be a number above 0 and at most 1000, got "${raw}"`);
    return 1;
  }
  return value;
}
