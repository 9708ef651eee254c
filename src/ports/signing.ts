/**
 * What signing asks of storage: the operator's Ed25519 signing keys (one active at a time, every other one
 * still published so what it signed keeps verifying), and what a signer gives back. Implemented on MariaDB
 * by signing/sql/signing-keys.ts; the signer itself is signing/core/signer.ts.
 *
 * Two keys, each signing its own kinds of thing (RFC 8725 §3.12): the **result** key signs final race results
 * only and is published at /.well-known/jwks.json; the **live** key signs live race versions and live boards
 * and is published apart, at /.well-known/jwks-live.json, so a verifier that trusts the results' key set
 * refuses every live signature. Each kind also says what it is (RFC 8725 §3.11): its JWS `typ` header and its
 * payload's `type` member, which the signer sets and every documented check reads (docs/verify.md).
 */

/** Which key signs a kind: the results' key or the live key (each a separate set of keys). */
export type SigningKeyPurpose = "result" | "live";

/** What a signature says it is: its JWS `typ` header (RFC 8725 §3.11), its payload's `type`, and its key. */
export interface SignedKind {
  readonly typ: string;
  readonly type: string;
  readonly purpose: SigningKeyPurpose;
}

/** A final race result, signed once at its freeze (races/core/signed-result.ts). */
export const RACE_RESULT_KIND: SignedKind = {
  typ: "race-result+jws",
  type: "topwagers.race-result.v1",
  purpose: "result",
};
/** One version of a live race, for a race stream's viewer that asked (races/core/live-race-payload.ts). */
export const LIVE_RACE_KIND: SignedKind = { typ: "live-race+jws", type: "topwagers.live-race.v1", purpose: "live" };
/** One version of a live board, for a board's caller that asked (boards/wire/parts/board-signatures.ts). */
export const LIVE_BOARD_KIND: SignedKind = { typ: "live-board+jws", type: "topwagers.live-board.v1", purpose: "live" };
/**
 * The payload types 0.3.0 and 0.4.0 gave live versions, signed then with the results' key and no `typ`: a check
 * names them live snapshots. Nothing but a final result was ever signed with RACE_RESULT_KIND's type.
 */
export const LEGACY_LIVE_TYPES = { race: "topwagers.race", board: "topwagers.board" } as const;
/** Every kind, by purpose: what each key may sign. */
export const SIGNED_KINDS: Readonly<Record<SigningKeyPurpose, readonly SignedKind[]>> = {
  result: [RACE_RESULT_KIND],
  live: [LIVE_RACE_KIND, LIVE_BOARD_KIND],
};

/**
 * Why a signer's last attempt to sign failed (the `topwagers_signing_failing` gauge): its active key could not be
 * read or opened (the database did not answer, or WEBHOOK_SECRET_KEY does not open it).
 */
/**
 * Why a signer's last attempt failed: its active key could not be read (the database), or it was read and cannot be
 * opened (sealed under a WEBHOOK_SECRET_KEY this instance does not have: values/sealed-secret.ts).
 */
export const SIGNING_FAILURES = ["key_read_failed", "key_unopenable"] as const;
export type SigningFailure = (typeof SIGNING_FAILURES)[number];

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
  /**
   * Stores the key already active, unless a key is active: false when one is (made meanwhile by another
   * instance, whose key wins). How the fleet makes its first live key once, whichever instance asks first.
   */
  insertActiveUnlessAny(key: ActiveSigningKey, at: number): Promise<boolean>;
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

/**
 * Signs a JSON object (with the operator's issuer added) with one key, reading nothing. The object's `type` names
 * its kind, which must be one the key signs (else it throws): the JWS's `typ` header is that kind's.
 */
export type KeyedSigner = (payload: Readonly<Record<string, unknown>>) => Promise<SignedPayload>;

/**
 * Signs a JSON object (with the operator's issuer added) with the active key of its purpose; undefined when no key
 * is active. Throws for an object whose `type` is not a kind of that purpose (a result key never signs live).
 */
export interface PayloadSigner {
  sign(payload: Readonly<Record<string, unknown>>): Promise<SignedPayload | undefined>;
  /**
   * The key active now, read (when not held) before the caller needs it: a signer bound to it, or undefined when
   * no key is active. For signing inside a transaction, where a read of the key could wait for a pool connection
   * that another transaction, waiting for this one's locks, holds.
   */
  withActiveKey(): Promise<KeyedSigner | undefined>;
}
