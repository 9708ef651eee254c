/**
 * The monitoring files hold together (issue 51), read as files: the PrometheusRule and the dashboard are what
 * scripts/monitoring.mjs writes (the PrometheusRule holding the rule file's groups as they are); every alert has a
 * severity, a summary, a description that names a metric its expression reads, and a runbook_url to a heading of
 * docs/operations.md; every alert is made to fire by a promtool test in deploy/monitoring/tests/; every query of
 * the rules and the dashboard parses as PromQL, reads only recording rules the file defines and metrics the
 * metrics table documents; the dashboard's panels fit Grafana's grid without overlapping. Whether the metrics exist
 * on a real /metrics is test/e2e/monitoring-metrics.test.ts; promtool runs in test/e2e/monitoring-rules.test.ts.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { dashboard, outputs, PROMETHEUS_RULE, RULES } from "../../scripts/monitoring.mjs";
import { alertsMadeToFire, ruleGroups, rules, selectors } from "../support/monitoring.js";
import { selectorsOf } from "../support/promql.js";

const OPERATIONS = readFileSync("docs/operations.md", "utf8");

/** GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped, spaces as -. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

const ANCHORS = new Set(
  OPERATIONS.split("\n")
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => anchorOf(line.replace(/^#+ /, ""))),
);

/** The metric names of docs/operations.md's metrics table, and its `prefix*` rows. */
function documentedMetrics(): { names: Set<string>; prefixes: string[] } {
  const section = OPERATIONS.slice(OPERATIONS.indexOf("## Metrics\n"), OPERATIONS.indexOf("**Renamed metrics**"));
  const names = new Set<string>();
  const prefixes: string[] = [];
  for (const row of section.split("\n").filter((line) => line.startsWith("| `topwagers_"))) {
    for (const [, name] of (row.split("|")[1] ?? "").matchAll(/`(topwagers_[a-z_0-9]+\*?)`/g)) {
      if (name?.endsWith("*")) prefixes.push(name.slice(0, -1));
      else names.add(name as string);
    }
  }
  return { names, prefixes };
}

const recorded = new Map(rules().flatMap((rule) => (rule.record === undefined ? [] : [[rule.record, rule.expr]])));

/** The metrics an expression reads, through the recording rules it reads. */
function metricsRead(expr: string): Set<string> {
  const out = new Set<string>();
  for (const { metric } of selectorsOf(expr)) {
    if (metric === undefined) continue;
    out.add(metric);
    const source = recorded.get(metric);
    if (source !== undefined) for (const inner of metricsRead(source)) out.add(inner);
  }
  return out;
}

describe("files made by scripts/monitoring.mjs", () => {
  it("deploy/kubernetes/prometheusrule.yaml and the dashboard JSON are what the script writes", () => {
    for (const [file, text] of outputs())
      expect(readFileSync(file, "utf8"), `${file}: run node scripts/monitoring.mjs`).toBe(text);
  });

  it("the PrometheusRule holds exactly the rule file's groups", () => {
    const manifest = parse(readFileSync(PROMETHEUS_RULE, "utf8")) as Record<string, unknown> & {
      spec: { groups: unknown };
    };
    expect({ apiVersion: manifest.apiVersion, kind: manifest.kind }).toEqual({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "PrometheusRule",
    });
    expect(manifest.spec.groups).toEqual(ruleGroups(readFileSync(RULES, "utf8")));
    expect(Object.keys(manifest.spec)).toEqual(["groups"]);
  });
});

describe("the PodMonitor", () => {
  it("scrapes the Deployment's metrics port, with the job the rules select", () => {
    type Labelled = { metadata: { labels: Record<string, string> } };
    const monitor = parse(readFileSync("deploy/kubernetes/podmonitor.yaml", "utf8")) as {
      kind: string;
      spec: {
        jobLabel: string;
        selector: { matchLabels: Record<string, string> };
        podMetricsEndpoints: { port: string }[];
      };
    };
    const deployment = parse(readFileSync("deploy/kubernetes/deployment.yaml", "utf8")) as {
      spec: { template: Labelled & { spec: { containers: { ports: { name: string; containerPort: number }[] }[] } } };
    };
    const pod = deployment.spec.template;
    expect(monitor.kind).toBe("PodMonitor");
    expect(pod.metadata.labels[monitor.spec.jobLabel]).toBe("topwagers");
    expect(monitor.spec.selector.matchLabels).toEqual(pod.metadata.labels);
    const ports = pod.spec.containers.flatMap((container) => container.ports);
    expect(monitor.spec.podMetricsEndpoints.map((endpoint) => endpoint.port)).toEqual(["metrics"]);
    expect(ports.find((port) => port.name === "metrics")?.containerPort).toBe(9100);
  });
});

describe("the alerts", () => {
  const alerts = rules().filter((rule) => rule.alert !== undefined);

  it("are the ones the runbooks and the tests name, each with a severity, summary, description and runbook", () => {
    expect(alerts.length).toBeGreaterThanOrEqual(15);
    for (const alert of alerts) {
      expect(Object.keys(alert.annotations ?? {}).sort(), alert.alert).toEqual([
        "description",
        "runbook_url",
        "summary",
      ]);
      expect(["critical", "warning"], alert.alert).toContain(alert.labels?.severity);
      const runbook = alert.annotations?.runbook_url ?? "";
      expect(runbook, alert.alert).toBe(`docs/operations.md#${(alert.alert as string).toLowerCase()}`);
      expect(
        ANCHORS.has(runbook.slice(runbook.indexOf("#") + 1)),
        `${runbook} is no heading of docs/operations.md`,
      ).toBe(true);
    }
  });

  it("each description names a metric its expression reads (through recording rules)", () => {
    for (const alert of alerts) {
      const read = [...metricsRead(alert.expr)];
      const named = read.filter((metric) => (alert.annotations?.description ?? "").includes(metric));
      expect(named.length, `${alert.alert}'s description names none of ${read.join(", ")}`).toBeGreaterThan(0);
    }
  });

  it("each is made to fire by a promtool test", () => {
    const fired = alertsMadeToFire();
    const names = [...new Set(alerts.map((alert) => alert.alert as string))].sort();
    expect(names.filter((name) => !fired.has(name))).toEqual([]);
    expect([...fired.keys()].sort()).toEqual(names);
  });
});

describe("the queries of the rules and the dashboard", () => {
  it("parse as PromQL and read recording rules that exist and documented metrics", () => {
    const { names, prefixes } = documentedMetrics();
    const all = selectors();
    expect(all.length).toBeGreaterThan(80);
    const unknown = all.filter(({ metric }) => {
      if (metric === undefined) return true;
      if (metric.includes(":")) return !recorded.has(metric);
      if (metric === "up") return false; // Prometheus's own, per target
      const family = metric.replace(/_(bucket|sum|count)$/, "");
      return !names.has(metric) && !names.has(family) && !prefixes.some((prefix) => metric.startsWith(prefix));
    });
    expect(unknown.map(({ where, metric }) => `${where}: ${metric}`)).toEqual([]);
  });

  it("match recording rules only on the job and the labels the rules give them", () => {
    const given = new Map<string, Set<string>>();
    for (const rule of rules()) {
      if (rule.record === undefined) continue;
      const labels = given.get(rule.record) ?? new Set<string>();
      for (const [label, value] of Object.entries(rule.labels ?? {})) labels.add(`${label}=${value}`);
      given.set(rule.record, labels);
    }
    for (const { where, metric, matchers } of selectors()) {
      if (!metric?.includes(":")) continue;
      for (const { label, op, value } of matchers) {
        if (label === "job") continue;
        expect({ where, matcher: `${label}${op}${value}`, given: given.get(metric)?.has(`${label}=${value}`) }).toEqual(
          {
            where,
            matcher: `${label}=${value}`,
            given: true,
          },
        );
      }
    }
  });

  it("select the job topwagers (the rules) or the dashboard's job", () => {
    for (const { where, metric, matchers } of selectors()) {
      // Recording rules carry the job they were made from; the job variable lists every job.
      if (metric?.includes(":") || where.startsWith("variable job ")) continue;
      expect(
        matchers.find((m) => m.label === "job"),
        `${where}: ${metric}`,
      ).toEqual({
        label: "job",
        op: "=",
        value: "topwagers",
      });
    }
  });
});

describe("the dashboard", () => {
  const board = dashboard();

  it("has unique panel ids and panels that fit the 24-column grid without overlapping", () => {
    const ids = board.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    for (const panel of board.panels) {
      const { x, y, w, h } = panel.gridPos;
      expect(x >= 0 && w > 0 && x + w <= 24, panel.title).toBe(true);
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          const taken = cells.get(`${row},${column}`);
          expect(taken, `${panel.title} overlaps ${taken}`).toBeUndefined();
          cells.set(`${row},${column}`, panel.title);
        }
      }
    }
  });

  it("asks the chosen data source in every panel, each panel with a query, a title and a description", () => {
    const panels = board.panels.filter((panel) => panel.type !== "row");
    expect(panels.length).toBeGreaterThan(30);
    for (const panel of panels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, read by Grafana.
      expect(panel.datasource, panel.title).toEqual({ type: "prometheus", uid: "${datasource}" });
      expect((panel.targets ?? []).length, panel.title).toBeGreaterThan(0);
      for (const one of panel.targets ?? []) expect(one.datasource, panel.title).toEqual(panel.datasource);
      expect(panel.description?.length ?? 0, panel.title).toBeGreaterThan(10);
    }
    expect(board.templating.list.map((variable) => variable.name)).toEqual(["datasource", "job", "instance"]);
  });

  it("has the rows an on-call engineer opens first", () => {
    expect(board.panels.filter((panel) => panel.type === "row").map((panel) => panel.title)).toEqual([
      "Overview",
      "Traffic and errors",
      "Latency",
      "Live boards and streams",
      "Race clock",
      "Webhooks",
      "Signing",
      "Retention",
      "Database and Redis",
      "Processes",
    ]);
  });
});
