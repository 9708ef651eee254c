/**
 * What a key may do (values/scopes.ts), checked by each skin once the caller is admitted: a call
 * that needs a scope the key lacks is refused with MISSING_SCOPE (403 / permission_denied), whose
 * message and ErrorInfo metadata `scope` name the scope.
 */
import { ServiceError } from "../../platform/errors/catalogue.js";
import type { Scope } from "../../values/scopes.js";
import type { Caller } from "../core/caller.js";

export function missingScope(scope: Scope): ServiceError {
  return new ServiceError("MISSING_SCOPE", `this API key lacks the scope ${scope}`, { info: { scope } });
}

/** Throws MISSING_SCOPE unless the caller's key holds `scope`. */
export function requireScope(caller: Caller, scope: Scope): void {
  if (!caller.scopes.includes(scope)) throw missingScope(scope);
}
