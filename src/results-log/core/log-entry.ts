/**
 * What the results log records (docs/verify.md, "The results log"): one entry per final result and per
 * cancellation of a race that had started, each the RFC 8785 canonical JSON (UTF-8) of
 *
 *   final:     {"affiliateId","at","digest","kind":"final","raceId","sha256","type":"topwagers.log-entry.v1"}
 *   cancelled: {"affiliateId","at","kind":"cancelled","raceId","type":"topwagers.log-entry.v1"}
 *
 * `at` is when it was frozen or cancelled (Unix seconds), `digest` the result's digest (docs/api.md), `sha256` the
 * SHA-256 (lowercase hex) of the signed result's JWS text, or null for a result frozen while no key was active.
 * A cancellation is not signed with a result key: its entry is its record, signed by every checkpoint after it.
 * A reader takes an entry only in exactly its canonical form, so no two parsers read one entry two ways.
 */
import canonicalize from "canonicalize";
import type { LoggedEvent } from "../../ports/results-log.js";

export const LOG_ENTRY_TYPE = "topwagers.log-entry.v1";

/** The entry's bytes. */
export function entryBytes(event: LoggedEvent): Uint8Array {
  return new TextEncoder().encode(entryText(event));
}

/** The entry's text (canonical JSON). */
export function entryText(event: LoggedEvent): string {
  const common = { type: LOG_ENTRY_TYPE, affiliateId: event.affiliateId, raceId: event.raceId, at: event.at };
  const fields =
    event.kind === "final"
      ? { ...common, kind: "final", digest: event.digest, sha256: event.sha256 }
      : { ...common, kind: "cancelled" };
  const text = canonicalize(fields);
  if (text === undefined) throw new Error("a log entry is always JSON");
  return text;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** What an entry records; undefined unless it is an entry in its canonical form. */
export function parseEntry(bytes: Uint8Array): LoggedEvent | undefined {
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const event = eventOf(value);
  return event !== undefined && entryText(event) === text ? event : undefined;
}

function eventOf(value: unknown): LoggedEvent | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const { affiliateId, raceId, at } = v;
  if (v.type !== LOG_ENTRY_TYPE || typeof affiliateId !== "string" || typeof raceId !== "string") return undefined;
  if (typeof at !== "number" || !Number.isSafeInteger(at) || at < 0) return undefined;
  if (v.kind === "cancelled") return { kind: "cancelled", affiliateId, raceId, at };
  const { digest, sha256 } = v;
  if (v.kind !== "final" || typeof digest !== "string" || !HEX64.test(digest)) return undefined;
  if (sha256 !== null && (typeof sha256 !== "string" || !HEX64.test(sha256))) return undefined;
  return { kind: "final", affiliateId, raceId, at, digest, sha256 };
}
