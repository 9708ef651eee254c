/**
 * The live key as the live signer reads it (docs/verify.md, "The live key"): live race versions and live boards
 * are signed with a key of their own, never the results' (RFC 8725 §3.12). A deployment that signs (a result key
 * is active) and has no live key yet gets one the first time something live is to be signed: made here and
 * stored already active, once for the fleet (the table's unique index on `active` lets one instance's key in;
 * the others read it). It is published at once at /.well-known/jwks-live.json. Rotating it is the operator's
 * (`topwagers signing-keys make --live`, then `activate`), as for the results' key.
 */
import type { ActiveSigningKey, SigningKeyStore } from "../../ports/signing.js";
import { makeSigningKey } from "./keys.js";

export interface LiveKeyOptions {
  /** Whether the deployment signs: a result key is active (so live versions are signed too). */
  readonly signingOn: () => Promise<boolean>;
  /** Current Unix time in seconds. */
  readonly now?: () => number;
  /** Told when this instance made the fleet's live key (its id, never the key). */
  readonly onMade?: (kid: string) => void;
}

/** The store's `active` for the live signer: the active live key, made once when signing is on and there is none. */
export function liveKeyMadeOnce(
  store: Pick<SigningKeyStore, "active" | "insertActiveUnlessAny">,
  options: LiveKeyOptions,
): Pick<SigningKeyStore, "active"> {
  return {
    active: async (): Promise<ActiveSigningKey | undefined> => {
      const active = await store.active();
      if (active !== undefined || !(await options.signingOn())) return active;
      const made = await makeSigningKey();
      const at = (options.now ?? (() => Math.floor(Date.now() / 1000)))();
      if (!(await store.insertActiveUnlessAny(made, at))) return store.active();
      options.onMade?.(made.kid);
      return made;
    },
  };
}
