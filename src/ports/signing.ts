/**
 * What signing asks of storage: the operator's Ed25519 signing keys (one active at a time, every other one
 * still published so what it signed keeps verifying), and what a signer gives back. Implemented on MariaDB
 * by storage/signing-keys.ts; the signer itself is signing/result-signer.ts.
 */

/** new: made, published, never used yet; active: every instance signs with it; retired: published, never signs. */
export type SigningKeyState = "new" | "active" | "retired";

/** A signing key as listed and published: never its private half. */
export interface PublishedSigningKey {
  /** The key id (`kid`), e.g. "sig_2026-11-28_3kq…". */
  readonly kid: string;
  /** The public key: base64url of the 32 raw bytes (RFC 8037 `x`). */
  readonly x: string;
  readonly state: SigningKeyState;
  /** Unix seconds. */
  readonly createdAt: number;
  readonly activatedAt: number | null;
  readonly retiredAt: number | null;
}

/** The active key with its private half (RFC 8037 `d`, base64url), opened from its sealed form at rest. */
export interface ActiveSigningKey {
  readonly kid: string;
  readonly x: string;
  readonly d: string;
}

export interface SigningKeyStore {
  /** Stores a new key (sealed at rest); it is published at once and signs only once activated. */
  insert(key: ActiveSigningKey, at: number): Promise<void>;
  /** Every key, oldest first. */
  list(): Promise<PublishedSigningKey[]>;
  /** The active key, or undefined when none is. */
  active(): Promise<ActiveSigningKey | undefined>;
  /** Makes the key active, retiring the one active before (in one transaction). */
  activate(kid: string, at: number): Promise<"activated" | "not_found" | "retired">;
  /** Retires a key that is not the active one. */
  retire(kid: string, at: number): Promise<"retired" | "not_found" | "active">;
}

/** A compact JWS (RFC 7515) and the key id that signed it. */
export interface SignedPayload {
  readonly jws: string;
  readonly kid: string;
}

/** Signs a JSON object (with the operator's issuer added) with one key, reading nothing. */
export type KeyedSigner = (payload: Readonly<Record<string, unknown>>) => Promise<SignedPayload>;

/** Signs a JSON object (with the operator's issuer added) with the active key; undefined when no key is active. */
export interface PayloadSigner {
  sign(payload: Readonly<Record<string, unknown>>): Promise<SignedPayload | undefined>;
  /**
   * The key active now, read (when not held) before the caller needs it: a signer bound to it, or undefined when
   * no key is active. For signing inside a transaction, where a read of the key could wait for a pool connection
   * that another transaction, waiting for this one's locks, holds.
   */
  withActiveKey(): Promise<KeyedSigner | undefined>;
}
