// Types of scripts/monitoring.mjs, for the tests that import it (test/unit/monitoring-files.test.ts).
export const RULES: string;
export const PROMETHEUS_RULE: string;
export const DASHBOARD: string;
/** The PrometheusRule manifest holding the rule file's groups. */
export function prometheusRule(rulesText: string): string;
/** The Grafana dashboard JSON model. */
export function dashboard(): GrafanaDashboard;
/** The dashboard as the script writes it. */
export function dashboardText(): string;
/** Each output file (path from the repository's root) and the text the script writes there. */
export function outputs(): [string, string][];

export interface GrafanaTarget {
  readonly refId: string;
  readonly expr: string;
  readonly legendFormat: string;
  readonly datasource: { readonly type: string; readonly uid: string };
}
export interface GrafanaPanel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly description?: string;
  readonly datasource?: { readonly type: string; readonly uid: string };
  readonly gridPos: { readonly h: number; readonly w: number; readonly x: number; readonly y: number };
  readonly targets?: readonly GrafanaTarget[];
  readonly fieldConfig?: { readonly defaults: { readonly unit?: string } };
}
export interface GrafanaDashboard {
  readonly title: string;
  readonly uid: string;
  readonly schemaVersion: number;
  readonly templating: { readonly list: readonly { readonly name: string; readonly query: unknown }[] };
  readonly panels: readonly GrafanaPanel[];
}
