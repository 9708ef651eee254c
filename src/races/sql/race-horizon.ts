/**
 * A race against the retention horizons (ingest/sql/wager-retention.ts), checked in the transaction that writes it
 * (the create in ./race-slugs.ts, a changed period in ./races.ts) under a shared lock on the horizons: the pruning
 * run's move waits for that transaction, or its plan sees the race. A race that has not ended must start at or
 * after its affiliate's horizons (its freeze reads its period from its start; the run then holds the affiliate
 * back from the race's day on, never from before its horizon); a race made as history (ended already) must need no
 * pruned row. A BeyondRetentionError names the horizon; races/core/race-admin.ts makes the first a field
 * violation of `startTimestamp` and answers the second as it is (BEYOND_RETENTION).
 */
import type { PoolConnection } from "mysql2/promise";
import { bucketRanges } from "../../ingest/sql/period-buckets.js";
import { horizonsOf, readHorizons } from "../../ingest/sql/retention-horizon.js";
import { BeyondRetentionError, describeHorizon, periodRefusal } from "../../values/retention-horizon.js";

/** Throws a BeyondRetentionError when the race's period reaches before what its affiliate's retention keeps. */
export async function refuseRaceBeyondRetention(
  connection: PoolConnection,
  race: { readonly affiliateId: number; readonly startTimestamp: number; readonly endTimestamp: number },
  now: number,
): Promise<void> {
  const horizons = horizonsOf(await readHorizons(connection, "shared"), race.affiliateId);
  if (race.endTimestamp < now) {
    const refusal = periodRefusal(bucketRanges(race.startTimestamp, race.endTimestamp), horizons);
    if (refusal !== undefined) throw refusal;
    return;
  }
  const kind = horizons.hourly > horizons.wagers ? "hourly" : "wagers";
  const horizon = horizons[kind];
  if (race.startTimestamp >= horizon) return;
  throw new BeyondRetentionError(
    kind,
    horizon,
    `startTimestamp must be at or after the retention horizon ${describeHorizon(horizon)}: wagers before it may ` +
      "already be deleted, so a race cannot count them",
  );
}
