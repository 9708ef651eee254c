/**
 * Webhook signing secrets at rest. With WEBHOOK_SECRET_KEY (32 bytes) a secret is stored as
 * `enc1:` + base64(12-byte IV ‖ 16-byte GCM tag ‖ ciphertext), AES-256-GCM, with the endpoint id as
 * additional data (a stored secret copied onto another endpoint does not decrypt). Without the key
 * it is stored as `plain:` + the secret, and the operations guide says to set one. Secrets are never
 * logged; the only way out is the one answer of CreateWebhookEndpoint or RotateWebhookSecret.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const ENCRYPTED = "enc1:";
const PLAIN = "plain:";

export class WebhookSecretBox {
  /** `key`: the 32-byte AES key, or undefined to store secrets unencrypted. */
  constructor(private readonly key: Buffer | undefined) {
    if (key !== undefined && key.length !== 32) throw new Error("WEBHOOK_SECRET_KEY must be 32 bytes");
  }

  seal(endpointId: string, secret: string): Buffer {
    if (this.key === undefined) return Buffer.from(`${PLAIN}${secret}`, "utf8");
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(endpointId, "utf8"));
    const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return Buffer.from(`${ENCRYPTED}${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64")}`, "utf8");
  }

  /** Throws when the secret was encrypted and no key, or another key, is set. */
  open(endpointId: string, stored: Buffer | string): string {
    const text = Buffer.isBuffer(stored) ? stored.toString("utf8") : stored;
    if (text.startsWith(PLAIN)) return text.slice(PLAIN.length);
    if (!text.startsWith(ENCRYPTED)) throw new Error(`webhook secret of ${endpointId} is in an unknown format`);
    if (this.key === undefined) {
      throw new Error(`webhook secret of ${endpointId} is encrypted and WEBHOOK_SECRET_KEY is not set`);
    }
    const raw = Buffer.from(text.slice(ENCRYPTED.length), "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(endpointId, "utf8"));
    decipher.setAuthTag(raw.subarray(12, 28));
    try {
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    } catch {
      throw new Error(`webhook secret of ${endpointId} does not decrypt with WEBHOOK_SECRET_KEY (another key?)`);
    }
  }
}
