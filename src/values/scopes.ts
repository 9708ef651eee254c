/**
 * What an API key may do. A key carries a set of scopes; a call that needs one the key lacks is
 * refused (keys/gate/scopes.ts: requireScope, 403 / permission_denied naming the scope).
 *
 *   boards:read     read leaderboards (REST, RPC, the live streams, the /board overlay)
 *   races:read      read races
 *   races:write     create, change and cancel races
 *   webhooks:write  manage webhook endpoints
 *
 * A secret key may hold any of them; a publishable key (browser-safe) only the read scopes. A key
 * made without naming scopes gets every scope its kind may hold; keys made before scopes existed
 * have the same (schema migration 9).
 */
import type { Violation } from "./violation.js";

export const SCOPES = ["boards:read", "races:read", "races:write", "webhooks:write"] as const;
export type Scope = (typeof SCOPES)[number];

/** Every scope: a secret key's default. Frozen and shared. */
export const SECRET_KEY_SCOPES: readonly Scope[] = Object.freeze([...SCOPES]);
/** The read scopes: all a publishable key may hold, and its default. Frozen and shared. */
export const PUBLISHABLE_KEY_SCOPES: readonly Scope[] = Object.freeze(["boards:read", "races:read"] as const);

export function isScope(text: unknown): text is Scope {
  return typeof text === "string" && (SCOPES as readonly string[]).includes(text);
}

/** Whether a scope lets a key change something (never for a publishable key). */
export function isWriteScope(scope: Scope): boolean {
  return scope.endsWith(":write");
}

/** Every scope a key of this kind may hold, which is also what it gets when none are named. */
export function scopesOfKind(publishable: boolean): readonly Scope[] {
  return publishable ? PUBLISHABLE_KEY_SCOPES : SECRET_KEY_SCOPES;
}

/**
 * The scopes in catalogue order, each once, and only those the kind may hold (a publishable key
 * never writes, whatever is stored); the shared default array of the kind when they are exactly it
 * (so a key set of many keys holds one array, not one per key).
 */
export function normalScopes(scopes: readonly string[], publishable: boolean): readonly Scope[] {
  const whole = scopesOfKind(publishable);
  const ordered = whole.filter((scope) => scopes.includes(scope));
  return ordered.length === whole.length && ordered.every((scope, i) => whole[i] === scope) ? whole : ordered;
}

/** Whether a key holds fewer scopes than its kind may (a restricted key): only then are they listed. */
export function isRestricted(scopes: readonly Scope[], publishable: boolean): boolean {
  const whole = scopesOfKind(publishable);
  return whole.some((scope) => !scopes.includes(scope));
}

/**
 * The problems of scopes asked for a new key, by field (`scopes[2]`): an unknown scope, or a write
 * scope for a publishable key. None asked is no problem (the kind's default).
 */
export function scopeProblems(field: string, asked: readonly string[], publishable: boolean): Violation[] {
  const problems: Violation[] = [];
  asked.forEach((text, index) => {
    const at = `${field}[${index}]`;
    if (!isScope(text)) {
      problems.push({
        field: at,
        message: `${at} ${JSON.stringify(text)} is not a scope; the scopes are ${SCOPES.join(", ")}`,
      });
    } else if (publishable && isWriteScope(text)) {
      problems.push({
        field: at,
        message: `${at} a publishable key is read-only and cannot have the scope ${text} (it may have ${PUBLISHABLE_KEY_SCOPES.join(", ")})`,
      });
    }
  });
  return problems;
}
