/**
 * The digest of a final race result, so anyone can check that a published result was not changed after
 * the freeze. The recipe (docs/api.md repeats it):
 *
 * 1. Build one JSON object with exactly these keys in this order, and no whitespace anywhere:
 *    `{"raceId":…,"slug":…,"startTimestamp":…,"endTimestamp":…,"rankBy":…,"currency":…,"entries":[…],
 *    "unallocated":…}`; each entry is `{"rank":…,"username":…,"wagered":…,"weighted":…,"prize":…}`.
 * 2. `raceId`, `slug`, `rankBy` ("wagered" or "weighted"), `currency` and `username` are JSON strings;
 *    `startTimestamp`, `endTimestamp` (Unix seconds) and `rank` are JSON integers.
 * 3. Amounts are JSON strings in canonical decimal form: no leading zeros in the whole part, no trailing zeros
 *    in the fraction, no point when there is no fraction ("1234.50" → "1234.5", "40.00" → "40",
 *    "0.00" → "0"). `wagered` is the entry's totalWageredDecimal, `prize` its prize, `unallocated` the result's.
 *    `weighted` is the entry's weightedWageredDecimal in a weighted race, and JSON null in a wagered race.
 * 4. `entries` are the result's entries as the API shows them: rank order (ties in the order shown).
 * 5. Strings are escaped as JavaScript's JSON.stringify escapes them (`"` and `\` escaped, control characters
 *    as \n, \t, … or \u00XX, everything else, non-ASCII included, as is), then encoded as UTF-8.
 * 6. The digest is the SHA-256 of those bytes, written as 64 lowercase hex digits.
 */
import { createHash } from "node:crypto";
import { canonicalDecimal } from "../../values/decimal.js";
import type { RankBy } from "../../values/weights.js";

export interface DigestEntry {
  readonly rank: number;
  readonly username: string;
  /** The plain total (any decimal form). */
  readonly wagered: string;
  /** The weighted total; written as null in a wagered race whatever it is. */
  readonly weighted: string | null;
  readonly prize: string;
}

export interface DigestedResult {
  readonly raceId: string;
  readonly slug: string;
  readonly startTimestamp: number;
  readonly endTimestamp: number;
  readonly rankBy: RankBy;
  readonly currency: string;
  /** The result's shown entries, in rank order. */
  readonly entries: readonly DigestEntry[];
  readonly unallocated: string;
}

export function raceDigest(result: DigestedResult): { canonical: string; digest: string } {
  // JSON.stringify keeps the insertion order of these (non-numeric) keys and writes no whitespace.
  const canonical = JSON.stringify({
    raceId: result.raceId,
    slug: result.slug,
    startTimestamp: integer(result.startTimestamp),
    endTimestamp: integer(result.endTimestamp),
    rankBy: result.rankBy,
    currency: result.currency,
    entries: result.entries.map((entry) => ({
      rank: integer(entry.rank),
      username: entry.username,
      wagered: canonicalDecimal(entry.wagered),
      weighted: result.rankBy === "weighted" ? canonicalDecimal(weightedOf(entry)) : null,
      prize: canonicalDecimal(entry.prize),
    })),
    unallocated: canonicalDecimal(result.unallocated),
  });
  return { canonical, digest: createHash("sha256").update(canonical, "utf8").digest("hex") };
}

function integer(value: number): number {
  if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
  return value;
}

function weightedOf(entry: DigestEntry): string {
  if (entry.weighted === null) throw new Error(`a weighted race's entry has no weighted total (rank ${entry.rank})`);
  return entry.weighted;
}
