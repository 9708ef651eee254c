/**
 * The monitoring files of deploy/monitoring/ as the tests read them (issue 51): the rules, their promtool unit
 * tests, the Grafana dashboard's queries (with Grafana's variables put in, as Grafana does before it asks
 * Prometheus), every PromQL selector they hold, and a parser of the Prometheus text format to check them against
 * a real /metrics.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { dashboard } from "../../scripts/monitoring.mjs";
import { type Selector, selectorsOf } from "./promql.js";

export const RULES_FILE = "deploy/monitoring/topwagers.rules.yaml";
export const RULE_TESTS_DIR = "deploy/monitoring/tests";

export interface Rule {
  readonly group: string;
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

interface RuleFile {
  readonly groups: readonly { readonly name: string; readonly rules: readonly Omit<Rule, "group">[] }[];
}

/** The rule file's groups as YAML reads them. */
export function ruleGroups(text = readFileSync(RULES_FILE, "utf8")): RuleFile["groups"] {
  return (parse(text) as RuleFile).groups;
}

/** Every rule, recording and alerting, with its group's name. */
export function rules(): Rule[] {
  return ruleGroups().flatMap((group) => group.rules.map((rule) => ({ group: group.name, ...rule })));
}

/** The promtool test files, by path. */
export function ruleTestFiles(): string[] {
  return readdirSync(RULE_TESTS_DIR)
    .filter((name) => name.endsWith(".test.yaml"))
    .sort()
    .map((name) => path.join(RULE_TESTS_DIR, name));
}

interface RuleTestFile {
  readonly rule_files: readonly string[];
  readonly tests: readonly {
    readonly alert_rule_test?: readonly { readonly alertname: string; readonly exp_alerts?: readonly unknown[] }[];
  }[];
}

/** The alerts some promtool test expects to fire (a non-empty exp_alerts), with the files that do. */
export function alertsMadeToFire(): Map<string, string[]> {
  const fired = new Map<string, string[]>();
  for (const file of ruleTestFiles()) {
    const suite = parse(readFileSync(file, "utf8")) as RuleTestFile;
    for (const test of suite.tests) {
      for (const check of test.alert_rule_test ?? []) {
        if ((check.exp_alerts ?? []).length === 0) continue;
        fired.set(check.alertname, [...new Set([...(fired.get(check.alertname) ?? []), file])]);
      }
    }
  }
  return fired;
}

/** What Grafana puts for its variables before a query reaches Prometheus: the job, every instance, a range. */
export const GRAFANA_VARIABLES: Readonly<Record<string, string>> = {
  $__rate_interval: "5m",
  $job: "topwagers",
  $instance: ".*",
};

export function withVariables(query: string): string {
  let out = query;
  // Longest first, so $__rate_interval is not read as a shorter name.
  for (const name of Object.keys(GRAFANA_VARIABLES).sort((a, b) => b.length - a.length)) {
    out = out.split(name).join(GRAFANA_VARIABLES[name] as string);
  }
  if (out.includes("$")) throw new Error(`a Grafana variable these checks do not know in ${query}`);
  return out;
}

/** Where a PromQL expression comes from (a rule, a panel, a variable) and the expression, variables put in. */
export interface Query {
  readonly where: string;
  readonly expr: string;
}

/** Every PromQL expression of the rules and the dashboard, its panels' queries and its variables' selectors. */
export function queries(): Query[] {
  const fromRules = rules().map((rule) => ({ where: `rule ${rule.record ?? rule.alert}`, expr: rule.expr }));
  const board = dashboard();
  const fromPanels = board.panels.flatMap((panel) =>
    (panel.targets ?? []).map((t) => ({ where: `panel "${panel.title}" ${t.refId}`, expr: withVariables(t.expr) })),
  );
  const fromVariables = board.templating.list.flatMap((variable) => {
    if (typeof variable.query !== "object" || variable.query === null) return [];
    const text = String((variable.query as { query: string }).query);
    // Grafana's label_values(<selector>, <label>): the selector is PromQL; the label must be on its series.
    const match = /^label_values\((.+), (\w+)\)$/.exec(text);
    if (match === null) throw new Error(`a variable query these checks do not read: ${text}`);
    const selector = withVariables(match[1] as string);
    return [{ where: `variable ${variable.name} (label ${match[2]})`, expr: selector }];
  });
  return [...fromRules, ...fromPanels, ...fromVariables];
}

/** Every selector of every query, with where it is. */
export function selectors(): (Selector & { readonly where: string })[] {
  return queries().flatMap((query) => selectorsOf(query.expr).map((one) => ({ ...one, where: query.where })));
}

// ---------------------------------------------------------------- the text format

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface Exposition {
  /** Family name → type, from the `# TYPE` lines. */
  readonly families: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
}

/** A Prometheus text-format page (version 0.0.4): its families and its samples' names and labels. */
export function parseExposition(text: string): Exposition {
  const families = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice("# TYPE ".length).split(" ");
      families.set(name as string, type as string);
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    samples.push(sampleOf(line));
  }
  return { families, samples };
}

function sampleOf(line: string): Sample {
  const brace = line.indexOf("{");
  const space = line.indexOf(" ");
  if (brace < 0 || (space >= 0 && space < brace)) return { name: line.slice(0, space), labels: {} };
  const labels: Record<string, string> = {};
  let at = brace + 1;
  for (;;) {
    if (line[at] === "}") break;
    const eq = line.indexOf('="', at);
    const name = line.slice(at, eq);
    let value = "";
    at = eq + 2;
    while (line[at] !== '"') {
      if (line[at] === "\\") {
        const next = line[at + 1];
        value += next === "n" ? "\n" : (next as string);
        at += 2;
      } else {
        value += line[at];
        at += 1;
      }
      if (at >= line.length) throw new Error(`an unterminated label value in ${line}`);
    }
    labels[name] = value;
    at += 1;
    if (line[at] === ",") at += 1;
  }
  return { name: line.slice(0, brace), labels };
}

/** The family a sample name belongs to: itself, or the histogram or summary it is a part of. */
export function familyOf(sample: string, families: ReadonlyMap<string, string>): string | undefined {
  if (families.has(sample)) return sample;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = sample.slice(0, -suffix.length);
    if (sample.endsWith(suffix) && ["histogram", "summary"].includes(families.get(base) ?? "")) return base;
  }
  return undefined;
}
