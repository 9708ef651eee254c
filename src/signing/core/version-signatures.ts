/**
 * Signing each version of something live once, however many callers ask for it (issue 36 item 3): a board's
 * versions (../../boards/wire/parts/board-signatures.ts), a race's (the race stream, ../../races/wire/race-events.ts). Versions are kept by an id
 * that names the thing and its version (the last 10,000); the first caller's signing is the one every other
 * awaits, and a failed one is forgotten so the next caller tries again. `signatures` counts what was signed.
 *
 * The answer is a `signed` member as JSON text: `payload` (the signed JSON object, `iss` included), `kid`, and
 * `jws`, the compact JWS with its payload left out (RFC 7515 appendix F: `header..signature`); put the base64url
 * of the RFC 8785 canonical form of `payload` between the two dots and verify it with the live JWK Set
 * (/.well-known/jwks-live.json). `null` while the deployment has no active signing key.
 */
import type { PayloadSigner } from "../../ports/signing.js";

export interface VersionSignaturesOptions {
  readonly signer: PayloadSigner;
  /** The issuer the signer adds as `iss`, repeated in the answered payload. */
  readonly issuer: string;
}

/** Versions remembered (each entry is one signed version's text). */
const MAX_VERSIONS_KEPT = 10_000;

export class VersionSignatures {
  /** Recent versions by id, oldest first (a Map iterates in insertion order). */
  private readonly byVersion = new Map<string, Promise<string>>();
  private count = 0;

  constructor(private readonly options: VersionSignaturesOptions) {}

  /** Versions this instance signed since it started. */
  get signatures(): number {
    return this.count;
  }

  /** The `signed` member of version `id` as JSON text: `payload()` signed on the first call, the same text after. */
  signedJson(id: string, payload: () => Promise<Record<string, unknown>> | Record<string, unknown>): Promise<string> {
    let signing = this.byVersion.get(id);
    if (signing === undefined) {
      signing = this.sign(payload);
      this.byVersion.set(id, signing);
      if (this.byVersion.size > MAX_VERSIONS_KEPT) this.byVersion.delete(this.byVersion.keys().next().value as string);
      // A failed signing is not kept: the next caller of this version tries again.
      signing.catch(() => this.byVersion.delete(id));
    }
    return signing;
  }

  private async sign(made: () => Promise<Record<string, unknown>> | Record<string, unknown>): Promise<string> {
    const payload = await made();
    const signed = await this.options.signer.sign(payload);
    if (signed === undefined) return "null";
    this.count += 1;
    const [header = "", , signature = ""] = signed.jws.split(".");
    return JSON.stringify({
      payload: { ...payload, iss: this.options.issuer },
      kid: signed.kid,
      jws: `${header}..${signature}`,
    });
  }
}
