/**
 * Standard Webhooks signing (docs/webhooks.md), on node:crypto alone. A secret is `whsec_` and the
 * base64 of 32 random bytes; the HMAC key is those bytes. A signature is `v1,` and the base64
 * HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`; during a secret rotation the header
 * carries one signature per secret, separated by spaces, and a receiver accepts any that verifies.
 * The tests check every delivery with the spec's reference package (`standardwebhooks`).
 */
import { createHmac, randomBytes } from "node:crypto";

export const WEBHOOK_SECRET_PREFIX = "whsec_";
/** The spec allows 24 to 64 bytes; 32 is the HMAC-SHA256 block-size-friendly common choice. */
const SECRET_BYTES = 32;

export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/** Whether `secret` is a `whsec_` secret whose key is 24 to 64 bytes. */
export function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) return false;
  const encoded = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return false;
  const bytes = Buffer.from(encoded, "base64").length;
  return bytes >= 24 && bytes <= 64;
}

/** One `v1,` signature of a message under one secret. */
export function signWebhook(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  if (!isWebhookSecret(secret)) throw new Error("not a whsec_ webhook secret");
  const key = Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), "base64");
  const mac = createHmac("sha256", key).update(`${messageId}.${timestampSeconds}.${body}`, "utf8").digest("base64");
  return `v1,${mac}`;
}

/** The three headers of one attempt: the timestamp is the attempt's, so a retry is signed afresh. */
export function webhookHeaders(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): Record<"webhook-id" | "webhook-timestamp" | "webhook-signature", string> {
  if (secrets.length === 0) throw new Error("a webhook needs at least one secret to be signed");
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((secret) => signWebhook(secret, messageId, timestampSeconds, body)).join(" "),
  };
}
