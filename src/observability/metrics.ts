/**
 * Prometheus metrics, served on the internal listener at GET /metrics. One
 * registry per app (not the library's global one), so several apps can live in
 * one process (tests) without clashing.
 */

import type { Pool } from "mysql2/promise";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { poolUsage } from "../compat.js";

export type Protocol = "rest" | "connect" | "grpc" | "grpc-web";

export interface MetricsSources {
  cacheStats?: () => { hits: number; misses: number; size: number };
  pools?: Readonly<Record<string, Pool>>;
  redisConnected?: () => boolean;
  changeFeed?: () => {
    polls: number;
    failures: number;
    changes: number;
    invalidations: number;
    lag_seconds: number;
  };
}

export class Metrics {
  readonly registry = new Registry();
  private readonly calls: Counter<"procedure" | "protocol" | "code">;
  private readonly durations: Histogram<"procedure" | "protocol">;
  private readonly rateLimited: Counter;
  readonly ingestedWagers: Counter<"result">;
  readonly upsertedUsers: Counter;
  readonly voidedWagers: Counter<"result">;
  readonly apiKeyEvents: Counter<"action">;
  readonly dataTierEvents: Counter<"event">;

  constructor(sources: MetricsSources = {}) {
    collectDefaultMetrics({ register: this.registry, prefix: "topwagers_" });
    this.calls = new Counter({
      name: "topwagers_rpc_calls_total",
      help: "Calls answered, by procedure, protocol and result code (ok or the snake_case error code).",
      labelNames: ["procedure", "protocol", "code"],
      registers: [this.registry],
    });
    this.durations = new Histogram({
      name: "topwagers_rpc_call_duration_seconds",
      help: "Time from the request's headers to the answer, by procedure and protocol.",
      labelNames: ["procedure", "protocol"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [this.registry],
    });
    this.rateLimited = new Counter({
      name: "topwagers_rate_limit_rejections_total",
      help: "Calls refused with resource_exhausted (a key over its limit, or an address sending too many bad keys).",
      registers: [this.registry],
    });
    this.ingestedWagers = new Counter({
      name: "topwagers_ingest_wagers_total",
      help: "Wagers received by RecordWagers: recorded (new) or duplicate (already recorded, changed nothing).",
      labelNames: ["result"],
      registers: [this.registry],
    });
    this.upsertedUsers = new Counter({
      name: "topwagers_ingest_users_upserted_total",
      help: "User profiles written by UpsertUsers.",
      registers: [this.registry],
    });
    this.voidedWagers = new Counter({
      name: "topwagers_ingest_voids_total",
      help: "Wager ids received by VoidWagers: voided (taken out now), already_voided, or pending (not recorded yet).",
      labelNames: ["result"],
      registers: [this.registry],
    });
    this.apiKeyEvents = new Counter({
      name: "topwagers_api_key_events_total",
      help: "API key changes made through ApiKeyService: created, revoked, rotated.",
      labelNames: ["action"],
      registers: [this.registry],
    });
    this.dataTierEvents = new Counter({
      name: "topwagers_db_events_total",
      help: "Data tier events: node_changed (the database node in use changed), replica_skipped (a read replica was skipped: behind, failing or down).",
      labelNames: ["event"],
      registers: [this.registry],
    });
    const { cacheStats, pools, redisConnected, changeFeed } = sources;
    if (changeFeed !== undefined) {
      new Gauge({
        name: "topwagers_change_feed",
        help:
          "The change feed since start: polls completed, failed polls, changes read, cached answers dropped " +
          "because their data changed, and seconds since the last good poll started (lag_seconds; cached answers " +
          "are served only while it is under 0.9) (stat).",
        labelNames: ["stat"],
        registers: [this.registry],
        collect() {
          const stats = changeFeed();
          for (const [stat, value] of Object.entries(stats)) this.set({ stat }, value);
        },
      });
    }
    if (cacheStats !== undefined) {
      new Gauge({
        name: "topwagers_result_cache_hits",
        help: "Leaderboard answers served from the result cache since start (including shared in-flight loads).",
        registers: [this.registry],
        collect() {
          this.set(cacheStats().hits);
        },
      });
      new Gauge({
        name: "topwagers_result_cache_misses",
        help: "Leaderboard answers that had to query the database since start.",
        registers: [this.registry],
        collect() {
          this.set(cacheStats().misses);
        },
      });
      new Gauge({
        name: "topwagers_result_cache_entries",
        help: "Periods currently held in the result cache.",
        registers: [this.registry],
        collect() {
          this.set(cacheStats().size);
        },
      });
    }
    if (pools !== undefined) {
      new Gauge({
        name: "topwagers_db_pool_connections",
        help: "MySQL pool connections by pool (read, write) and state (open, idle, waiting requests).",
        labelNames: ["pool", "state"],
        registers: [this.registry],
        collect() {
          for (const [name, pool] of Object.entries(pools)) {
            const usage = poolUsage(pool);
            this.set({ pool: name, state: "open" }, usage.open);
            this.set({ pool: name, state: "idle" }, usage.idle);
            this.set({ pool: name, state: "waiting" }, usage.waiting);
          }
        },
      });
    }
    if (redisConnected !== undefined) {
      new Gauge({
        name: "topwagers_redis_connected",
        help: "1 while rate limits are shared through Redis, 0 while the in-memory insurance limiter counts.",
        registers: [this.registry],
        collect() {
          this.set(redisConnected() ? 1 : 0);
        },
      });
    }
  }

  observeCall(procedure: string, protocol: Protocol, code: string, seconds: number): void {
    this.calls.inc({ procedure, protocol, code });
    this.durations.observe({ procedure, protocol }, seconds);
    if (code === "resource_exhausted") this.rateLimited.inc();
  }
}
