/**
 * The webhook tables' column limits (migration 11) and the cuts that fit a value to them, shared by the
 * endpoint SQL (a disable's reason) and the attempt log (an attempt's error and the receiver's answer).
 */

/** webhook_deliveries.last_error, webhook_attempts.error, webhook_endpoints.disabled_reason: VARCHAR(500). */
export const MAX_ERROR = 500;
const MAX_RESPONSE_BYTES = 1024;

/** Text cut to at most `max` characters, for a VARCHAR column. */
export function clip(text: string | null, max: number): string | null {
  return text === null ? null : [...text].slice(0, max).join("");
}

/** The first bytes of a response as stored (VARBINARY(1024)). */
export function responseBytes(text: string | null): Buffer | null {
  return text === null ? null : Buffer.from(text, "utf8").subarray(0, MAX_RESPONSE_BYTES);
}
