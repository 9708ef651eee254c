/**
 * Where this service relies on prom-client beyond its types (tested in test/integration/compat.test.ts):
 * a registry reads any registered object with prom-client's metric shape (`name`, `help`, `type`,
 * `get()` resolving to the values, `reset()`), not only its own classes (their types say so).
 */
import type { Metric, Registry } from "prom-client";

/** One sample of a collected metric: the sample's name when it is not the metric's (histogram parts). */
export interface CollectedValue {
  readonly metricName?: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/**
 * Registers a metric whose samples are made when the registry is read (`values`), in prom-client's own
 * form. prom-client's classes keep their samples in label-hashed maps, which costs a hash per update;
 * this lets a metric keep them however is cheapest.
 */
export function registerCollected(
  registry: Registry,
  metric: {
    readonly name: string;
    readonly help: string;
    readonly type: "counter" | "gauge" | "histogram";
    values(): CollectedValue[];
  },
): void {
  const { name, help, type } = metric;
  const collected = {
    name,
    help,
    type,
    aggregator: "sum",
    async get() {
      return { name, help, type, aggregator: "sum", values: metric.values() };
    },
    reset() {},
  };
  registry.registerMetric(collected as unknown as Metric);
}
