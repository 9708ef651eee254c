/**
 * The domain's own errors: plain errors that know nothing of Connect or HTTP. The skins map them
 * through the error catalogue (platform/errors/domain.ts); the live boards' refusals are in live-boards.ts.
 */
import type { Violation } from "./violation.js";

/** A query breaks the rules: one violation per field at fault, in field order. */
export class InvalidQueryError extends Error {
  constructor(readonly violations: readonly Violation[]) {
    super(violations.map((v) => v.message).join(". "));
    this.name = "InvalidQueryError";
  }
}

/** The store could not answer; `cause` is the adapter's error (platform/errors/database.ts says what callers see). */
export class StoreFailure extends Error {
  constructor(override readonly cause: unknown) {
    super("the store could not answer", { cause });
    this.name = "StoreFailure";
  }
}
