/**
 * The operator's signature (docs/verify.md): a JSON object, with the issuer added as `iss`, is
 * canonicalized per RFC 8785 (the `canonicalize` package) and signed as a compact JWS (RFC 7515) with
 * EdDSA / Ed25519 (RFC 8037) by the deployment's active key of one purpose (results, or live versions), its
 * `kid` and the kind's `typ` (RFC 8725 §3.11) in the protected header. A signer signs only its purpose's kinds
 * (the object's `type` names the kind): asked to sign anything else, it throws rather than sign it with the
 * wrong key (RFC 8725 §3.12).
 *
 * Every instance signs with the key the database says is active. The active key is read again at most
 * every `refreshMs` (default 2 s), so a key activated by the CLI or another instance is used everywhere
 * within that time, without a restart; the keys it replaced stay published (./published-keys.ts). The private key
 * lives only in this object's memory (a KeyObject): it is never logged, answered or counted. `failing` says why the
 * last attempt to sign failed (the key could not be read, or it cannot be opened here), until one succeeds (the
 * `topwagers_signing_failing` gauge; `onFailing` hears of each new reason once).
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import canonicalize from "canonicalize";
import { CompactSign } from "jose";
import {
  type ActiveSigningKey,
  type KeyedSigner,
  type PayloadSigner,
  SIGNED_KINDS,
  type SignedKind,
  type SignedPayload,
  type SigningFailure,
  type SigningKeyPurpose,
  type SigningKeyStore,
} from "../../ports/signing.js";
import { unopenableSecret } from "../../values/sealed-secret.js";

export interface SignerOptions {
  /** Which key this signer holds, so which kinds it signs (default: results). */
  readonly purpose?: SigningKeyPurpose;
  /** Names the operator in every signature (`iss`), e.g. "https://casino.example" (ISSUER). */
  readonly issuer: string;
  /** How long the active key read from the store is used before it is read again. */
  readonly refreshMs?: number;
  readonly now?: () => number;
  /** Told of each signature (the key's id, never the key): a debug log line. */
  readonly onSigned?: (kid: string) => void;
  /** Told each time something was to be signed while no key is active (so it goes out unsigned). */
  readonly onNoActiveKey?: () => void;
  /** Told when the signer starts failing for a reason (not at each attempt), with the error that says why. */
  readonly onFailing?: (reason: SigningFailure, error: unknown) => void;
  /** Told when it signs again after failing. */
  readonly onRecovered?: () => void;
}

interface HeldKey {
  readonly kid: string;
  readonly key: KeyObject;
}

export class Signer implements PayloadSigner {
  private held: { readonly key: HeldKey | undefined; readonly until: number } | undefined;
  private reading: Promise<HeldKey | undefined> | undefined;
  private count = 0;
  private failure: SigningFailure | undefined;

  constructor(
    private readonly store: Pick<SigningKeyStore, "active">,
    private readonly options: SignerOptions,
  ) {}

  get issuer(): string {
    return this.options.issuer;
  }

  get purpose(): SigningKeyPurpose {
    return this.options.purpose ?? "result";
  }

  /** Whether a key of this signer's purpose is active (read as a signature reads it), so that it signs. */
  async isOn(): Promise<boolean> {
    return (await this.activeKey()) !== undefined;
  }

  /** Signatures made by this instance since it started. */
  get signatures(): number {
    return this.count;
  }

  /** Why the last attempt to sign failed; undefined once one succeeds (or none failed). */
  get failing(): SigningFailure | undefined {
    return this.failure;
  }

  async sign(payload: Readonly<Record<string, unknown>>): Promise<SignedPayload | undefined> {
    const keyed = await this.withActiveKey();
    return keyed === undefined ? undefined : keyed(payload);
  }

  async withActiveKey(): Promise<KeyedSigner | undefined> {
    const held = await this.activeKey().catch((error: unknown) => {
      const reason: SigningFailure = unopenableSecret(error) === undefined ? "key_read_failed" : "key_unopenable";
      if (this.failure !== reason) this.options.onFailing?.(reason, error);
      this.failure = reason;
      throw error;
    });
    if (held === undefined) {
      this.failure = undefined; // read, and no key is active: nothing fails, signing is off
      this.options.onNoActiveKey?.();
      return undefined;
    }
    return async (payload) => {
      const { typ } = kindOf(payload, this.purpose);
      const jws = await new CompactSign(signedBytes(payload, this.options.issuer))
        .setProtectedHeader({ alg: "EdDSA", kid: held.kid, typ })
        .sign(held.key);
      if (this.failure !== undefined) this.options.onRecovered?.();
      this.failure = undefined;
      this.count += 1;
      this.options.onSigned?.(held.kid);
      return { jws, kid: held.kid };
    };
  }

  /** Forgets the held key: the next signature reads the active key again (after an activation here). */
  forget(): void {
    this.held = undefined;
  }

  private async activeKey(): Promise<HeldKey | undefined> {
    const now = (this.options.now ?? Date.now)();
    if (this.held !== undefined && now < this.held.until) return this.held.key;
    this.reading ??= this.store
      .active()
      .then((active) => {
        const key = active === undefined ? undefined : heldKey(active, this.held?.key);
        this.held = { key, until: now + (this.options.refreshMs ?? 2_000) };
        return key;
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}

/** The bytes a signature covers: the payload with `iss`, canonical per RFC 8785, as UTF-8. */
export function signedBytes(payload: Readonly<Record<string, unknown>>, issuer: string): Uint8Array {
  const text = canonicalize({ ...payload, iss: issuer });
  if (text === undefined) throw new Error("a signed payload must be JSON");
  return new TextEncoder().encode(text);
}

/** The kind `payload.type` names, when `purpose`'s key signs it; throws otherwise (nothing is signed). */
export function kindOf(payload: Readonly<Record<string, unknown>>, purpose: SigningKeyPurpose): SignedKind {
  const kind = SIGNED_KINDS[purpose].find((k) => k.type === payload.type);
  if (kind === undefined) {
    throw new Error(`the ${purpose} key does not sign a payload of type ${JSON.stringify(payload.type)}`);
  }
  return kind;
}

function heldKey(active: ActiveSigningKey, before: HeldKey | undefined): HeldKey {
  if (before !== undefined && before.kid === active.kid) return before;
  const key = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", x: active.x, d: active.d }, format: "jwk" });
  return { kid: active.kid, key };
}
