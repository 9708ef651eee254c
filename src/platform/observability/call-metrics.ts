/**
 * The calls by procedure, protocol and code, and their durations (topwagers_rpc_calls_total and
 * topwagers_rpc_call_duration_seconds): counted in plain maps per call and exported when the registry is read, so
 * a call costs a map lookup and a few additions. The families the app counts into are in ./metrics.ts.
 */

import { Counter, type Registry } from "prom-client";
import { type CollectedValue, registerCollected } from "../compat/prom-client.js";

export type Protocol = "rest" | "sse" | "connect" | "grpc" | "grpc-web";

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

/** Every call observed, by procedure, then protocol, ready to be exported when the registry is read. */
export class CallTable {
  /** By procedure, then protocol: found with two map lookups per call instead of prom-client hashing labels. */
  private readonly series = new Map<string, Map<Protocol, CallSeries>>();

  /** Adds the two families to `registry`, read from this table when scraped. */
  register(registry: Registry): void {
    registerCalls(registry, this.series);
  }

  observe(procedure: string, protocol: Protocol, code: string, seconds: number): void {
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
  }
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
