/**
 * Races, built the one way every process builds them (the server's public and internal listeners, the CLI, the
 * demo): the race statements on the primary, live standings from the boards' pool (through the leaderboard's
 * cache when the process has one), the freeze's totals read on the primary and causally on Galera
 * (boards/sql/standings-store.ts causalStandings), and the result signer. The signer is not optional: a Races
 * that can freeze a result can sign it (with no active key the result goes out unsigned, and the signer says so).
 */
import { boardStandings } from "../boards/core/board-standings.js";
import type { Leaderboard } from "../boards/core/leaderboard.js";
import { causalStandings, mariadbStandings } from "../boards/sql/standings-store.js";
import { HorizonWatch } from "../ingest/sql/retention-horizon.js";
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import type { ResultsLogReader } from "../ports/results-log.js";
import type { PayloadSigner } from "../ports/signing.js";
import { newRaces, type Races } from "../races/core/races.js";
import { mariadbRaces } from "../races/sql/race-store.js";

export interface RacesParts {
  readonly database: Database;
  readonly config: Pick<Config, "defaultAvatarUrl" | "racesPerAffiliate">;
  /** Signs each final result at the freeze (services/signing.ts: buildSigning's `signer`, or resultSigner). */
  readonly signer: PayloadSigner;
  /** The process's leaderboard: live standings share its cache and freshness; absent, they are read uncached. */
  readonly leaderboard?: Leaderboard;
  /** Current Unix time in seconds (tests move it); absent or undefined: the system clock. */
  readonly now?: (() => number) | undefined;
  /** The results log, whose proofs the answers of logged races carry (services/results-log.ts); absent: none. */
  readonly log?: ResultsLogReader | undefined;
  /** The process's retention horizons (its heartbeat reads them); absent, one watch of their own on the primary. */
  readonly horizons?: HorizonWatch;
}

export function createRaces({ database, config, signer, leaderboard, now, log, horizons }: RacesParts): Races {
  const watch = horizons ?? new HorizonWatch(database.write);
  const boards = mariadbStandings(database.leaderboard, watch);
  return newRaces({
    signer,
    store: mariadbRaces(database.write),
    standings: leaderboard === undefined ? boards : boardStandings(leaderboard, boards),
    freezeStandings: causalStandings(database.write, database.flavour, watch),
    defaultAvatarUrl: config.defaultAvatarUrl,
    racesPerAffiliate: config.racesPerAffiliate,
    ...(now === undefined ? {} : { now }),
    ...(log === undefined ? {} : { log }),
  });
}
