/**
 * A secret sealed at rest (the signing keys' private halves, the results log's note key, the webhooks' secrets:
 * platform/database/secret-box.ts) that this process cannot open, and why. Plain and of no layer, so that the race
 * clock can tell a freeze that waits for a key from one that failed (races/core/race-clock.ts) and the signer can
 * name the reason in its gauge, without knowing the box.
 */

/** Why a sealed secret does not open here. */
export type UnopenableReason =
  /** It is sealed and WEBHOOK_SECRET_KEY is not set on this instance. */
  | "no_key"
  /** Neither WEBHOOK_SECRET_KEY nor a key of WEBHOOK_SECRET_KEY_PREVIOUS sealed it. */
  | "other_key"
  /** It is in no format this release knows. */
  | "unknown_format";

export class UnopenableSecretError extends Error {
  constructor(
    /** The secret's row, as it was sealed (its additional data), e.g. `signing-key:k1`. */
    readonly sealedAs: string,
    readonly reason: UnopenableReason,
    message: string,
  ) {
    super(message);
    this.name = "UnopenableSecretError";
  }
}

/** The UnopenableSecretError behind `error` (itself, or its cause), if there is one. */
export function unopenableSecret(error: unknown): UnopenableSecretError | undefined {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth += 1) {
    if (at instanceof UnopenableSecretError) return at;
  }
  return undefined;
}
