/**
 * The metrics read from elsewhere when scraped: gauges and running totals of the result cache, the change feed,
 * the pools, the key set, the live boards, the fleet, Redis and readiness, for whichever sources an app has. The families
 * the app counts into are in ./metrics.ts.
 */

import type { Pool } from "mysql2/promise";
import { Counter, Gauge, type Registry } from "prom-client";
import { poolUsage } from "../compat/mysql2.js";
import { READINESS_STATUSES } from "./readiness.js";

/** The protocols a live board is streamed over. */
export const STREAM_PROTOCOLS = ["sse", "connect", "grpc", "grpc-web"] as const;

export interface MetricsSources {
  cacheStats?: () => { hits: number; misses: number; size: number };
  pools?: Readonly<Record<string, Pool>>;
  redisConnected?: () => boolean;
  /** Usable API keys held in memory, by kind. */
  apiKeys?: () => Readonly<Record<"secret" | "publishable", number>>;
  /**
   * Well-formed keys not held (keys/core/key-catch-up.ts): change-feed reads made for them, and such keys by what
   * happened (waited for a read, refused at once as known unknown, refused at once as too many waiting).
   */
  keyCatchUp?: () => { rounds: number; waited: number; rememberedUnknown: number; overflow: number };
  /** Open streams by protocol, and distinct boards with viewers. */
  live?: () => { streams: Readonly<Record<string, number>>; boards: number };
  /**
   * Board answers by where they came from: computed here in full, computed here by merging changed users
   * (incremental), or taken from the period's leader in a fleet (remote).
   */
  computations?: () => Readonly<Record<"full" | "incremental" | "remote", number>>;
  /** The fleet (REDIS_URL): instances alive, periods this instance leads, periods it took over; absent alone. */
  fleet?: () => { members: number; led: number; handovers: number; fallbacks: { no_answer: number; behind: number } };
  changeFeed?: () => {
    /** Good polls, failed polls, change rows read, cached answers dropped: running totals since start. */
    polls: number;
    failures: number;
    changes: number;
    invalidations: number;
    /** Seconds since the last good poll started. */
    lagSeconds: number;
  };
  /** The status readiness answers (./readiness.ts), or the last one it answered when a probe takes long. */
  readiness?: () => Promise<string | undefined>;
}

/** A value read when scraped: one number (no labels), or numbers by the one label. */
function eachReading(
  value: number | Readonly<Record<string, number>>,
  label: string,
  put: (labels: Record<string, string>, n: number) => void,
): void {
  if (typeof value === "number") put({}, value);
  else for (const [labelValue, n] of Object.entries(value)) put({ [label]: labelValue }, n);
}

/**
 * Registers the gauges and totals read from `sources` when scraped, for whichever sources are given. Called once
 * per source.
 */
export function readSources(registry: Registry, sources: MetricsSources): void {
  const { cacheStats, pools, redisConnected, changeFeed, live, apiKeys, keyCatchUp, computations, fleet } = sources;
  if (sources.readiness !== undefined) readReadiness(registry, sources.readiness);
  if (apiKeys !== undefined) readApiKeys(registry, apiKeys);
  if (computations !== undefined) readComputations(registry, computations);
  if (fleet !== undefined) readFleet(registry, fleet);
  if (keyCatchUp !== undefined) readKeyCatchUp(registry, keyCatchUp);
  if (live !== undefined) readLiveBoards(registry, live);
  if (changeFeed !== undefined) readChangeFeed(registry, changeFeed);
  if (cacheStats !== undefined) readResultCache(registry, cacheStats);
  if (pools !== undefined) readPools(registry, pools);
  if (redisConnected !== undefined) readRedis(registry, redisConnected);
}

/** A number, or numbers by the one label, read from elsewhere when scraped. */
type Reading = () => number | Readonly<Record<string, number>>;

/** A gauge read when scraped; `read` returns the value, or values by the one label. */
function scrapedGauge(registry: Registry, name: string, help: string, read: Reading, label = ""): void {
  new Gauge({
    name,
    help,
    labelNames: label === "" ? [] : [label],
    registers: [registry],
    collect() {
      eachReading(read(), label, (labels, n) => this.set(labels, n));
    },
  });
}

/**
 * A running total kept elsewhere (the cache, the change feed), exported as a counter: read when scraped;
 * `read` returns the total, or totals by the one label.
 */
function scrapedTotal(registry: Registry, name: string, help: string, read: Reading, label = ""): void {
  new Counter({
    name,
    help,
    labelNames: label === "" ? [] : [label],
    registers: [registry],
    collect() {
      const value = read();
      this.reset();
      eachReading(value, label, (labels, n) => this.inc(labels, n));
    },
  });
}

function readApiKeys(registry: Registry, apiKeys: NonNullable<MetricsSources["apiKeys"]>): void {
  scrapedGauge(
    registry,
    "topwagers_api_keys",
    "Usable API keys held in memory by this instance, by kind (secret, publishable).",
    apiKeys,
    "kind",
  );
}

function readKeyCatchUp(registry: Registry, keyCatchUp: NonNullable<MetricsSources["keyCatchUp"]>): void {
  scrapedTotal(
    registry,
    "topwagers_api_key_catch_ups_total",
    "Reads of the change feed made because a well-formed key was not held (a key issued elsewhere, or made up).",
    () => keyCatchUp().rounds,
  );
  scrapedTotal(
    registry,
    "topwagers_api_key_unknown_total",
    "Well-formed keys not held, by outcome: waited (for a read of the change feed), remembered (refused at " +
      "once, still unknown after a read), overflow (refused at once, too many waiting).",
    () => {
      const stats = keyCatchUp();
      return { waited: stats.waited, remembered: stats.rememberedUnknown, overflow: stats.overflow };
    },
    "outcome",
  );
}

function readLiveBoards(registry: Registry, live: NonNullable<MetricsSources["live"]>): void {
  scrapedGauge(
    registry,
    "topwagers_streams",
    "Open live-board streams, by protocol (sse, connect, grpc, grpc-web).",
    () => {
      const open = live().streams;
      return Object.fromEntries(STREAM_PROTOCOLS.map((protocol) => [protocol, open[protocol] ?? 0]));
    },
    "protocol",
  );
  scrapedGauge(registry, "topwagers_live_boards", "Distinct live boards with viewers on this instance.", () => {
    return live().boards;
  });
}

function readComputations(registry: Registry, computations: NonNullable<MetricsSources["computations"]>): void {
  scrapedTotal(
    registry,
    "topwagers_board_computations_total",
    "Board answers (a period's top 100, for live boards and POSTs alike), by kind: full (computed here from the " +
      "database), incremental (computed here from the changed users only), remote (taken from the period's " +
      "leader in a fleet).",
    computations,
    "kind",
  );
}

function readFleet(registry: Registry, fleet: NonNullable<MetricsSources["fleet"]>): void {
  scrapedGauge(registry, "topwagers_fleet_members", "Instances of this fleet alive, as this one last read it.", () => {
    return fleet().members;
  });
  scrapedGauge(
    registry,
    "topwagers_fleet_boards_led",
    "Periods this instance computes for the fleet: shown by its live boards, or asked for by another instance " +
      "within the last 10 s.",
    () => fleet().led,
  );
  scrapedTotal(
    registry,
    "topwagers_fleet_handovers_total",
    "Periods this instance took over from another when the fleet's members changed.",
    () => fleet().handovers,
  );
  scrapedTotal(
    registry,
    "topwagers_fleet_fallbacks_total",
    "Boards computed here because their leader did not answer (gone, failed, or not in time: no_answer) or " +
      "answered from behind this instance's change feed (behind).",
    () => fleet().fallbacks,
    "reason",
  );
}

function readChangeFeed(registry: Registry, changeFeed: NonNullable<MetricsSources["changeFeed"]>): void {
  scrapedTotal(
    registry,
    "topwagers_change_feed_polls_total",
    "Reads of the change feed, by result: ok or failed (the database did not answer).",
    () => {
      const { polls, failures } = changeFeed();
      return { ok: polls, failed: failures };
    },
    "result",
  );
  scrapedTotal(
    registry,
    "topwagers_change_feed_changes_total",
    "Change rows read from the change feed.",
    () => changeFeed().changes,
  );
  scrapedTotal(
    registry,
    "topwagers_change_feed_invalidations_total",
    "Cached answers dropped because the change feed said their data changed.",
    () => changeFeed().invalidations,
  );
  scrapedGauge(
    registry,
    "topwagers_change_feed_lag_seconds",
    "Seconds since the last good read of the change feed started; cached answers are served only while it is " +
      "under 0.9.",
    () => changeFeed().lagSeconds,
  );
}

function readResultCache(registry: Registry, cacheStats: NonNullable<MetricsSources["cacheStats"]>): void {
  scrapedTotal(
    registry,
    "topwagers_result_cache_hits_total",
    "Leaderboard answers served from the result cache (including shared in-flight loads).",
    () => cacheStats().hits,
  );
  scrapedTotal(
    registry,
    "topwagers_result_cache_misses_total",
    "Leaderboard answers that had to query the database.",
    () => cacheStats().misses,
  );
  scrapedGauge(
    registry,
    "topwagers_result_cache_entries",
    "Periods currently held in the result cache.",
    () => cacheStats().size,
  );
}

function readPools(registry: Registry, pools: Readonly<Record<string, Pool>>): void {
  new Gauge({
    name: "topwagers_db_pool_connections",
    help: "MySQL pool connections by pool (read, write, leaderboard) and state (open, idle, waiting requests).",
    labelNames: ["pool", "state"],
    registers: [registry],
    collect() {
      for (const [name, pool] of Object.entries(pools)) {
        for (const [state, n] of Object.entries(poolUsage(pool))) this.set({ pool: name, state }, n);
      }
    },
  });
}

function readRedis(registry: Registry, redisConnected: () => boolean): void {
  scrapedGauge(
    registry,
    "topwagers_redis_connected",
    "1 while rate limits are shared through Redis, 0 while the in-memory insurance limiter counts.",
    () => (redisConnected() ? 1 : 0),
  );
}

function readReadiness(registry: Registry, status: () => Promise<string | undefined>): void {
  new Gauge({
    name: "topwagers_readiness",
    help:
      "1 on the status readiness (/readyz) answers on this instance, 0 on the others: ready, database_unavailable, " +
      "migrations_pending, loading_keys, release_too_old, shutting_down.",
    labelNames: ["status"],
    registers: [registry],
    async collect() {
      const now = await status();
      for (const one of READINESS_STATUSES) this.set({ status: one }, one === now ? 1 : 0);
    },
  });
}
