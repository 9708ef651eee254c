/**
 * What ingest checks against the retention horizons (../../values/retention-horizon.ts), inside its own transaction
 * and under a shared lock on the recorded horizons, so the pruning run cannot move them meanwhile: a wager placed
 * before its affiliate's wager horizon is refused (its raw rows are gone, so a repeat could not be recognised and it would be
 * counted twice), and so is the void of a wager the pruning run deleted (it would otherwise wait forever as the void
 * of a wager not seen yet, and the totals would keep the wager). Nothing of the batch is recorded either way.
 */
import { createHash } from "node:crypto";
import type { PoolConnection, RowDataPacket } from "mysql2/promise";
import type { WagerRecord } from "../../values/records.js";
import { voidRefusal, wagerRefusal } from "../../values/retention-horizon.js";
import { horizonsOf, prunedOf, readHorizons } from "./retention-horizon.js";

/**
 * Throws a BeyondRetentionError naming the first wager of the batch placed before its affiliate's wager horizon
 * (`affiliateOf`: the internal key of a wager's affiliate, undefined for a user not known yet, who is held to the
 * fleet's horizon).
 */
export async function refuseBeyondHorizon(
  connection: PoolConnection,
  wagers: readonly WagerRecord[],
  affiliateOf: (wager: WagerRecord) => number | undefined,
): Promise<void> {
  const recorded = await readHorizons(connection, "shared");
  if (recorded.wagers === 0) return;
  for (const wager of wagers) {
    const affiliate = affiliateOf(wager);
    const refusal = wagerRefusal(
      wager.id,
      wager.placedAt,
      horizonsOf(recorded, affiliate),
      prunedOf(recorded, affiliate),
    );
    if (refusal !== undefined) throw refusal;
  }
}

/**
 * Throws a BeyondRetentionError naming the first of `missing` (void ids with no recorded wager) whose wager was
 * pruned: its id's hash is in `pruned_wagers` (the first 64 bits of SHA-256, as PRUNED_ID_HASH computes them in
 * SQL: a new id matches one by chance about once in 10^11 voids at 50M pruned wagers).
 */
export async function refusePrunedVoids(connection: PoolConnection, missing: readonly string[]): Promise<void> {
  if (missing.length === 0) return;
  const horizons = await readHorizons(connection, "shared");
  if (horizons.wagers === 0) return;
  const hashes = new Map(missing.map((id) => [prunedIdHash(id).toString("hex"), id]));
  const [rows] = await connection.query<RowDataPacket[]>(
    "SELECT HEX(id_hash) AS h FROM pruned_wagers WHERE id_hash IN (?)",
    [[...hashes.keys()].map((hex) => Buffer.from(hex, "hex"))],
  );
  const found = new Set(rows.map((r) => String(r.h).toLowerCase()));
  const first = missing.find((id) => found.has(prunedIdHash(id).toString("hex")));
  if (first !== undefined) throw voidRefusal(first, horizons);
}

/** The 8 bytes kept of a pruned wager's platform id: PRUNED_ID_HASH's twin. */
export function prunedIdHash(wagerId: string): Buffer {
  return createHash("sha256").update(wagerId, "utf8").digest().subarray(0, 8);
}
