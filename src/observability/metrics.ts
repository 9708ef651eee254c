/**
 * Prometheus metrics, served at GET /metrics on the internal listener (or on
 * METRICS_PORT alone). One registry per app (not the library's global one), so
 * several apps can live in one process (tests) without clashing. Running totals
 * are counters named `…_total`; every family is documented in
 * docs/operations.md (a test compares the two).
 */

import type { Pool } from "mysql2/promise";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { poolUsage } from "../compat/mysql2.js";
import { type CollectedValue, registerCollected } from "../compat/prom-client.js";
import { packageInfo } from "../package-info.js";

export type Protocol = "rest" | "sse" | "connect" | "grpc" | "grpc-web";

/** The protocols a live board is streamed over. */
export const STREAM_PROTOCOLS = ["sse", "connect", "grpc", "grpc-web"] as const;

export interface MetricsSources {
  cacheStats?: () => { hits: number; misses: number; size: number };
  pools?: Readonly<Record<string, Pool>>;
  redisConnected?: () => boolean;
  /** Usable API keys held in memory, by kind. */
  apiKeys?: () => Readonly<Record<"secret" | "publishable", number>>;
  /**
   * Well-formed keys not held (auth/key-catch-up.ts): change-feed reads made for them, and such keys by what
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
}

/** Upper bounds (seconds) of topwagers_rpc_call_duration_seconds' buckets. */
const CALL_DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

/**
 * One procedure and protocol's call durations as a Prometheus histogram: observations per bucket (the last
 * one above every bound), their sum and count. A call adds to it in place; it is exported when read.
 */
class DurationSeries {
  /** Observations per bucket, not cumulative (exported cumulatively). */
  readonly counts = new Float64Array(CALL_DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(readonly labels: Readonly<Record<"procedure" | "protocol", string>>) {}

  observe(seconds: number): void {
    let i = 0;
    while (i < CALL_DURATION_BUCKETS.length && seconds > (CALL_DURATION_BUCKETS[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count += 1;
  }
}

/** One procedure and protocol: its durations, and its calls by code not yet exported. */
interface CallSeries {
  readonly durations: DurationSeries;
  readonly pending: Map<string, { readonly labels: Record<"procedure" | "protocol" | "code", string>; count: number }>;
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
 * The app's metrics: the registry, the families the app counts into (below, each with its help text), the
 * calls by procedure and protocol, and the readings of the given sources.
 */
export class Metrics {
  /** By procedure, then protocol: found with two map lookups per call instead of prom-client hashing labels. */
  private readonly series = new Map<string, Map<Protocol, CallSeries>>();
  readonly registry = registryWithCalls(this.series);
  private readonly rateLimited = counter(
    this.registry,
    "topwagers_rate_limit_rejections_total",
    "Calls refused with resource_exhausted (a key over its limit, or an address sending too many bad keys).",
  );
  readonly ingestedWagers = counter(
    this.registry,
    "topwagers_ingest_wagers_total",
    "Wagers received by RecordWagers: recorded (new) or duplicate (already recorded, changed nothing).",
    "result",
  );
  readonly upsertedUsers = counter(
    this.registry,
    "topwagers_ingest_users_upserted_total",
    "User profiles written by UpsertUsers.",
  );
  readonly voidedWagers = counter(
    this.registry,
    "topwagers_ingest_voids_total",
    "Wager ids received by VoidWagers: voided (taken out now), already_voided, or pending (not recorded yet).",
    "result",
  );
  readonly apiKeyEvents = counter(
    this.registry,
    "topwagers_api_key_events_total",
    "API key changes made through ApiKeyService: created, revoked, rotated, expiry_set (the key a rotation " +
      "replaced). The CLI's changes are logged by no server; every server follows them through the change feed.",
    "action",
  );
  readonly dataTierEvents = counter(
    this.registry,
    "topwagers_db_events_total",
    "Data tier events: node_changed (the database node in use changed), replica_skipped (a read replica was skipped: behind, failing or down).",
    "event",
  );
  readonly streamMessages = counterFromZero(
    this.registry,
    "topwagers_stream_messages_total",
    "Messages written to live-board streams (boards and heartbeats), by protocol (sse, connect, grpc, grpc-web).",
    "protocol",
    STREAM_PROTOCOLS,
  );
  readonly streamDisconnects = counterFromZero(
    this.registry,
    "topwagers_stream_disconnects_total",
    "Live-board streams ended or refused, by reason: client (went away, or its deadline passed), slow (did not " +
      "read), limit (refused by a stream limit), shutdown (the server stopped), revoked (its key was revoked or expired).",
    "reason",
    ["client", "slow", "limit", "shutdown", "revoked"],
  );
  readonly boardRecomputes = counter(
    this.registry,
    "topwagers_board_recomputes_total",
    "Live boards computed: once when a board gets its first viewer and once per change that touches it, however " +
      "many viewers it has.",
  );
  readonly webhookAttempts = counterFromZero(
    this.registry,
    "topwagers_webhook_attempts_total",
    "Webhook delivery attempts made by this instance, by result: delivered (2xx), retry (failed, tried again " +
      "later), failed (its last attempt failed), disabled (410 Gone, or the endpoint failed for 5 days), lost " +
      "(its claim's lease ran out before it was recorded; another instance sends it).",
    "result",
    ["delivered", "retry", "failed", "disabled", "lost"],
  );
  readonly webhookDeliveries = counterFromZero(
    this.registry,
    "topwagers_webhook_deliveries_total",
    "Webhook deliveries finished by this instance, by result: delivered or failed (no attempt left, 410, or the " +
      "endpoint is disabled; kept for replay).",
    "result",
    ["delivered", "failed"],
  );
  readonly webhookOldestDueSeconds = new Gauge({
    name: "topwagers_webhook_oldest_due_seconds",
    help: "Age of the oldest webhook delivery that is due and not being sent (0: none waits), as this instance last read it.",
    registers: [this.registry],
  });
  readonly webhookDisabledEndpoints = new Gauge({
    name: "topwagers_webhook_disabled_endpoints",
    help: "Webhook endpoints disabled (by their owner, a 410 Gone, or 5 days of failures), as this instance last read it.",
    registers: [this.registry],
  });

  constructor(sources: MetricsSources = {}) {
    this.readFrom(sources);
  }

  /**
   * Registers the gauges and totals read from elsewhere when scraped (the cache, the change feed, the pools,
   * the key set, the live boards, Redis), for whichever sources are given. Called once per source.
   */
  readFrom(sources: MetricsSources): void {
    const { registry } = this;
    const { cacheStats, pools, redisConnected, changeFeed, live, apiKeys, keyCatchUp, computations, fleet } = sources;
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

  observeCall(procedure: string, protocol: Protocol, code: string, seconds: number): void {
    let byProtocol = this.series.get(procedure);
    if (byProtocol === undefined) {
      byProtocol = new Map();
      this.series.set(procedure, byProtocol);
    }
    let series = byProtocol.get(protocol);
    if (series === undefined) {
      series = { durations: new DurationSeries({ procedure, protocol }), pending: new Map() };
      byProtocol.set(protocol, series);
    }
    const entry = series.pending.get(code);
    if (entry === undefined) series.pending.set(code, { labels: { procedure, protocol, code }, count: 1 });
    else entry.count += 1;
    series.durations.observe(seconds);
    if (code === "resource_exhausted") this.rateLimited.inc();
  }
}

/** A registry holding Node's default metrics, the build's, and the calls counted in `series`. */
function registryWithCalls(series: ReadonlyMap<string, ReadonlyMap<Protocol, CallSeries>>): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "topwagers_" });
  new Gauge({
    name: "topwagers_build_info",
    help: "Always 1; the labels say which build runs: the package version, its commit and the Node version.",
    labelNames: ["version", "commit", "node_version"],
    registers: [registry],
  }).set({ version: packageInfo().version, commit: packageInfo().commit, node_version: process.versions.node }, 1);
  registerCalls(registry, series);
  return registry;
}

/**
 * The calls by procedure, protocol and code, and their durations. Both are counted in `series` per call and
 * exported when the registry is read (a scrape), so a call costs a map lookup and a few additions rather than
 * prom-client's label checks and hashing (which a Histogram's labels() child does on every observation too).
 */
function registerCalls(registry: Registry, series: ReadonlyMap<string, ReadonlyMap<Protocol, CallSeries>>): void {
  new Counter({
    name: "topwagers_rpc_calls_total",
    help: "Calls answered, by procedure, protocol and result code (ok or the snake_case error code).",
    labelNames: ["procedure", "protocol", "code"],
    registers: [registry],
    collect() {
      for (const byProtocol of series.values()) {
        for (const { pending } of byProtocol.values()) {
          for (const entry of pending.values()) {
            if (entry.count === 0) continue;
            this.inc(entry.labels, entry.count);
            entry.count = 0;
          }
        }
      }
    },
  });
  registerCollected(registry, {
    name: "topwagers_rpc_call_duration_seconds",
    help: "Time from the request's headers to the answer, by procedure and protocol.",
    type: "histogram",
    values: () => durationValues("topwagers_rpc_call_duration_seconds", series),
  });
}

/** A counter the app adds to, with no label or one. */
function counter<L extends string = never>(registry: Registry, name: string, help: string, label?: L): Counter<L> {
  return new Counter<L>({ name, help, labelNames: label === undefined ? [] : [label], registers: [registry] });
}

/**
 * A counter with one label, each of whose values starts at 0, so a rate over them is defined before the first
 * event.
 */
function counterFromZero<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  label: L,
  values: readonly string[],
): Counter<L> {
  const family = counter(registry, name, help, label);
  for (const value of values) family.inc({ [label]: value } as Partial<Record<L, string>>, 0);
  return family;
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

/**
 * A histogram's samples as prom-client writes them: per series, each bucket's cumulative count (`le` first,
 * then the series' labels), `+Inf`, the sum and the count.
 */
function durationValues(
  name: string,
  series: ReadonlyMap<string, ReadonlyMap<Protocol, CallSeries>>,
): CollectedValue[] {
  const values: CollectedValue[] = [];
  for (const byProtocol of series.values()) {
    for (const { durations } of byProtocol.values()) {
      let cumulative = 0;
      for (const [i, bound] of CALL_DURATION_BUCKETS.entries()) {
        cumulative += durations.counts[i] as number;
        values.push({ metricName: `${name}_bucket`, labels: { le: bound, ...durations.labels }, value: cumulative });
      }
      values.push({
        metricName: `${name}_bucket`,
        labels: { le: "+Inf", ...durations.labels },
        value: durations.count,
      });
      values.push({ metricName: `${name}_sum`, labels: { ...durations.labels }, value: durations.sum });
      values.push({ metricName: `${name}_count`, labels: { ...durations.labels }, value: durations.count });
    }
  }
  return values;
}
