/**
 * Every metric the rules and the dashboard read exists on a running instance's /metrics (issue 51), so renaming a
 * metric, a label or a label value fails here instead of silently turning an alert off (0.3.0 renamed several).
 * The built server runs with every optional part that exports families (Redis, wager pruning, its own metrics
 * port) and answers one board read, so the board read series and their le="0.25" bucket exist. Each selector of
 * each rule and dashboard query is read from the PromQL syntax tree (test/support/promql.ts); for each, the metric
 * (or the histogram it is a part of) must be a family of /metrics, each label it matches must be on its samples
 * (so those it matches on must have samples), and each value it asks for (with = or a list of alternatives) must
 * be one the samples carry. What a fresh instance cannot show:
 * `up`, `job` and `instance` (Prometheus adds them), and answer codes not yet answered (`code`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../support/database.js";
import { createKey } from "../support/fixtures.js";
import { type Exposition, familyOf, parseExposition, selectors } from "../support/monitoring.js";
import { freePort, type ServerProcess, startServerProcess } from "../support/processes.js";

const database = useTestDatabase("monitoring_metrics");
/** Labels Prometheus gives every series of a target, not on /metrics. */
const TARGET_LABELS = new Set(["job", "instance"]);
/** Labels whose values appear only once something happens (an answer with that code). */
const VALUES_SEEN_LATER = new Set(["code"]);

let server: ServerProcess;
let metricsPort: number;
let exposition: Exposition;

beforeAll(async () => {
  metricsPort = await freePort();
  server = await startServerProcess({
    DATABASE_URL: database.url,
    REDIS_URL: "redis://127.0.0.1:6379",
    METRICS_PORT: String(metricsPort),
    INGEST_TOKEN: "monitoring-metrics-ingest-token",
    WAGER_RETENTION_DAYS: "400",
  });
  const key = await createKey(database.db, "monitoring-aff");
  const read = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
    body: JSON.stringify({ startTimestamp: 1_767_225_600, endTimestamp: 1_767_311_999, numUsers: 10 }),
  });
  expect(read.status).toBe(200);
  await read.text();
  exposition = parseExposition(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
}, 40_000);

afterAll(async () => {
  await server?.stop();
});

/** The values a matcher asks for when they can be listed: its value with =, each alternative of a|b|c with =~ or !~. */
function askedValues(op: string, value: string): string[] {
  if (op === "=") return [value];
  if ((op === "=~" || op === "!~") && /^[A-Za-z0-9_.:/-]+(\|[A-Za-z0-9_.:/-]+)*$/.test(value)) return value.split("|");
  return [];
}

describe("what the rules and the dashboard read exists on /metrics", () => {
  it('a board read was counted, with the le="0.25" bucket the SLO reads', () => {
    const bucket = exposition.samples.find(
      (s) =>
        s.name === "topwagers_rpc_call_duration_seconds_bucket" &&
        s.labels.procedure === "topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod" &&
        s.labels.protocol === "rest" &&
        s.labels.le === "0.25",
    );
    expect(bucket).toBeDefined();
  });

  it("every metric, label and label value of every selector", () => {
    const problems: string[] = [];
    let checked = 0;
    for (const { where, metric, matchers } of selectors()) {
      if (metric === undefined || metric.includes(":") || metric === "up") continue; // recording rules: the unit test
      checked += 1;
      if (familyOf(metric, exposition.families) === undefined) {
        problems.push(`${where}: ${metric} is not on /metrics`);
        continue;
      }
      // A counter with labels has no sample until it first counts; a selector that matches no label of its own
      // needs only the family.
      const samples = exposition.samples.filter((s) => s.name === metric);
      for (const { label, op, value } of matchers) {
        if (TARGET_LABELS.has(label)) continue;
        const values = new Set(samples.flatMap((s) => (s.labels[label] === undefined ? [] : [s.labels[label]])));
        if (values.size === 0) {
          problems.push(`${where}: ${metric} has no label ${label}`);
          continue;
        }
        if (VALUES_SEEN_LATER.has(label)) continue;
        for (const asked of askedValues(op, value)) {
          if (!values.has(asked)) problems.push(`${where}: ${metric}{${label}} is never "${asked}" (${[...values]})`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(60);
  });

  it("the dashboard's instance variable reads a family every instance exports", () => {
    expect(exposition.families.get("topwagers_build_info")).toBe("gauge");
  });
});
