/**
 * Secrets at rest: the webhooks' signing secrets and the signing keys' private halves
 * (signing/sql/signing-keys.ts). With WEBHOOK_SECRET_KEY (32 bytes) a secret is stored as
 * `enc1:` + base64(12-byte IV ‖ 16-byte GCM tag ‖ ciphertext), AES-256-GCM, with the row's id as
 * additional data (a stored secret copied onto another row does not decrypt). Without the key
 * it is stored as `plain:` + the secret, and the operations guide says to set one. Secrets are never
 * logged; the only way out is the one answer of CreateWebhookEndpoint or RotateWebhookSecret.
 *
 * A key ring for rotating WEBHOOK_SECRET_KEY itself: the previous keys (WEBHOOK_SECRET_KEY_PREVIOUS) still open
 * what they sealed, new secrets are sealed with the current key only, and ../../signing/sql/secret-reseal.ts seals
 * again under the current key what an older key or no key sealed. The stored format is unchanged (`enc1:`), so releases
 * before the ring read what this one writes with the same key; GCM's tag tells which key sealed a value.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { UnopenableSecretError } from "../../values/sealed-secret.js";

const ENCRYPTED = "enc1:";
const PLAIN = "plain:";

export class SecretBox {
  /**
   * `key`: the 32-byte AES key, or undefined to store secrets unencrypted. `previousKeys`: keys that sealed secrets
   * before the current one (they open, they never seal).
   */
  constructor(
    private readonly key: Buffer | undefined,
    private readonly previousKeys: readonly Buffer[] = [],
  ) {
    for (const one of [...(key === undefined ? [] : [key]), ...previousKeys]) {
      if (one.length !== 32) throw new Error("WEBHOOK_SECRET_KEY must be 32 bytes");
    }
  }

  /**
   * Which keys this box seals and opens with, as fingerprints (`keyFingerprint`): never the keys. `seals` is ""
   * without WEBHOOK_SECRET_KEY (secrets stored plain).
   */
  fingerprints(): { readonly seals: string; readonly opens: readonly string[] } {
    const ring = [...(this.key === undefined ? [] : [this.key]), ...this.previousKeys];
    return { seals: this.key === undefined ? "" : keyFingerprint(this.key), opens: ring.map(keyFingerprint) };
  }

  /**
   * Which key of this box's ring sealed `stored`, as its fingerprint: "" when it is kept plain (any instance opens it),
   * undefined when no key of the ring opens it.
   */
  openerOf(rowId: string, stored: Buffer | string): string | undefined {
    const text = Buffer.isBuffer(stored) ? stored.toString("utf8") : stored;
    if (text.startsWith(PLAIN)) return "";
    if (!text.startsWith(ENCRYPTED)) return undefined;
    const key = [...(this.key === undefined ? [] : [this.key]), ...this.previousKeys].find(
      (one) => openWith(one, rowId, text) !== undefined,
    );
    return key === undefined ? undefined : keyFingerprint(key);
  }

  /** Whether sealing `stored` again would change how it is kept: plain or sealed by a previous key, with a key set. */
  needsResealing(aad: string, stored: Buffer | string): boolean {
    if (this.key === undefined) return false;
    const text = Buffer.isBuffer(stored) ? stored.toString("utf8") : stored;
    if (text.startsWith(PLAIN)) return true;
    return text.startsWith(ENCRYPTED) && openWith(this.key, aad, text) === undefined;
  }

  seal(rowId: string, secret: string): Buffer {
    if (this.key === undefined) return Buffer.from(`${PLAIN}${secret}`, "utf8");
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(rowId, "utf8"));
    const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return Buffer.from(`${ENCRYPTED}${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64")}`, "utf8");
  }

  /**
   * The secret; throws UnopenableSecretError, naming the real cause and the fingerprints of the keys tried, when it
   * is sealed and neither the key nor a previous key opens it.
   */
  open(rowId: string, stored: Buffer | string): string {
    const text = Buffer.isBuffer(stored) ? stored.toString("utf8") : stored;
    if (text.startsWith(PLAIN)) return text.slice(PLAIN.length);
    if (!text.startsWith(ENCRYPTED)) {
      throw new UnopenableSecretError(
        rowId,
        "unknown_format",
        `the sealed secret ${rowId} is in a format this release does not know`,
      );
    }
    if (this.key === undefined && this.previousKeys.length === 0) {
      throw new UnopenableSecretError(
        rowId,
        "no_key",
        `the secret ${rowId} is sealed and WEBHOOK_SECRET_KEY is not set on this instance: set it to the key that ` +
          "sealed it (the one in use when it was made)",
      );
    }
    for (const key of [...(this.key === undefined ? [] : [this.key]), ...this.previousKeys]) {
      const opened = openWith(key, rowId, text);
      if (opened !== undefined) return opened;
    }
    throw new UnopenableSecretError(rowId, "other_key", `the secret ${rowId} ${otherKeyCause(this.fingerprints())}`);
  }
}

/** The fingerprints of the keys WEBHOOK_SECRET_KEY and WEBHOOK_SECRET_KEY_PREVIOUS name (what an instance registers). */
export function secretKeyFingerprints(settings: {
  readonly secretKey: Buffer | undefined;
  readonly previousSecretKeys?: readonly Buffer[];
}): { readonly seals: string; readonly opens: readonly string[] } {
  return new SecretBox(settings.secretKey, settings.previousSecretKeys ?? []).fingerprints();
}

/** "was sealed under another WEBHOOK_SECRET_KEY than …": what opening with the wrong ring says, with its fingerprints. */
export function otherKeyCause(ring: { readonly seals: string; readonly opens: readonly string[] }): string {
  const previous = ring.opens.filter((fingerprint) => fingerprint !== ring.seals);
  return (
    `was sealed under another WEBHOOK_SECRET_KEY than this instance's (fingerprint ${ring.seals === "" ? "none: not set" : ring.seals}; ` +
    `WEBHOOK_SECRET_KEY_PREVIOUS: ${previous.length === 0 ? "none" : previous.join(", ")}): set the key that sealed it ` +
    "(as WEBHOOK_SECRET_KEY, or in WEBHOOK_SECRET_KEY_PREVIOUS), or make and activate a new key with this one"
  );
}

/**
 * A key's fingerprint: the first 8 bytes of HMAC-SHA256(key, "topwagers secret key fingerprint"), in hex. Two
 * processes with the same WEBHOOK_SECRET_KEY show the same one; it says nothing of the key (a 256-bit key cannot
 * be searched for), so it may be logged and stored beside the instance that holds the key.
 */
export function keyFingerprint(key: Buffer): string {
  return createHmac("sha256", key).update("topwagers secret key fingerprint").digest("hex").slice(0, 16);
}

/** The secret `text` (`enc1:…`) sealed with `key` for `aad`, or undefined when that key did not seal it. */
function openWith(key: Buffer, aad: string, text: string): string | undefined {
  const raw = Buffer.from(text.slice(ENCRYPTED.length), "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(raw.subarray(12, 28));
  try {
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
