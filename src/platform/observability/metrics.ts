/**
 * Prometheus metrics, served at GET /metrics on the internal listener (or on
 * METRICS_PORT alone). One registry per app (not the library's global one), so
 * several apps can live in one process (tests) without clashing. Running totals
 * are counters named `…_total`; every family is documented in
 * docs/operations.md (a test compares the two).
 *
 * This file: the registry and the families the app counts into. The calls by procedure and protocol are counted
 * in ./call-metrics.ts, the readings of other parts (cache, change feed, pools, keys, streams, fleet, Redis) in
 * ./scraped-metrics.ts.
 */

import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { BOARD_PLANS, boardPlansTaken } from "../../values/board-plans.js";
import { packageInfo } from "../package-info.js";
import { CallTable, type Protocol } from "./call-metrics.js";
import { type MetricsSources, readSources, STREAM_PROTOCOLS } from "./scraped-metrics.js";

export type { MetricsSources, Protocol };

/**
 * The app's metrics: the registry, the families the app counts into (below, each with its help text), the
 * calls by procedure and protocol, and the readings of the given sources.
 */
export class Metrics {
  private readonly calls = new CallTable();
  readonly registry = registryWithCalls(this.calls);
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

  /** Registers the gauges and totals read from `sources` when scraped (./scraped-metrics.ts). */
  readFrom(sources: MetricsSources): void {
    readSources(this.registry, sources);
  }

  observeCall(procedure: string, protocol: Protocol, code: string, seconds: number): void {
    this.calls.observe(procedure, protocol, code, seconds);
    if (code === "resource_exhausted") this.rateLimited.inc();
  }
}

/** A registry holding Node's default metrics, the build's, and the calls counted in `calls`. */
function registryWithCalls(calls: CallTable): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "topwagers_" });
  new Gauge({
    name: "topwagers_build_info",
    help: "Always 1; the labels say which build runs: the package version, its commit and the Node version.",
    labelNames: ["version", "commit", "node_version"],
    registers: [registry],
  }).set({ version: packageInfo().version, commit: packageInfo().commit, node_version: process.versions.node }, 1);
  calls.register(registry);
  new Counter({
    name: "topwagers_board_plan_total",
    help:
      "Boards computed from the database, by plan: threshold (a long period read month by month, best rows first, " +
      "until the rest cannot reach the board), rollup (every user's rows of the period summed, then the chosen " +
      "users' totals: shorter periods, and before migration 25), fallback (the threshold plan gave up, then rollup), " +
      "small and raw (an affiliate of fewer than 500 users: one statement over the rollups, or over its raw wagers " +
      "where those are fewer). Counts every board of the process.",
    labelNames: ["plan"],
    registers: [registry],
    collect() {
      const taken = boardPlansTaken();
      this.reset();
      for (const plan of BOARD_PLANS) this.inc({ plan }, taken[plan]);
    },
  });
  return registry;
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
