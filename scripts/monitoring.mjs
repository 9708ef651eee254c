#!/usr/bin/env node
// `node scripts/monitoring.mjs`: writes the monitoring files made from others (docs/operations.md#alerts-and-dashboards):
//   deploy/kubernetes/prometheusrule.yaml    the Prometheus Operator's PrometheusRule holding
//                                            deploy/monitoring/topwagers.rules.yaml's groups as they are (comments too)
//   deploy/monitoring/grafana-dashboard.json the Grafana dashboard, from the panel list below
// `--check` writes nothing and exits 1 when either file differs from what it would write (test/unit/monitoring-files
// .test.ts checks the same). Edit the rules file or the panels here, never the two outputs.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const RULES = "deploy/monitoring/topwagers.rules.yaml";
export const PROMETHEUS_RULE = "deploy/kubernetes/prometheusrule.yaml";
export const DASHBOARD = "deploy/monitoring/grafana-dashboard.json";

/** The PrometheusRule manifest for the rule file's text: its `groups:` and everything after, under `spec:`. */
export function prometheusRule(rulesText) {
  const lines = rulesText.split("\n");
  const start = lines.indexOf("groups:");
  if (start < 0) throw new Error(`${RULES} has no top-level "groups:" line`);
  const body = lines
    .slice(start)
    .map((line) => (line === "" ? "" : `  ${line}`))
    .join("\n");
  return `# The topwagers rules for the Prometheus Operator (docs/operations.md#alerts-and-dashboards): the groups of
# ${RULES}, written here by \`node scripts/monitoring.mjs\`. Edit that file, then run the script.
# A Prometheus picks PrometheusRules by label (its ruleSelector): give this one the label yours selects (with
# kube-prometheus-stack, release: <the Helm release's name>). Its series are scraped by podmonitor.yaml (job="topwagers").
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: topwagers
  labels:
    app.kubernetes.io/name: topwagers
spec:
${body}`;
}

// ---------------------------------------------------------------- the dashboard

const BOARD_READS = 'procedure="topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod"';
/** Every instance of the chosen job, or the chosen instances. Recording rules carry `job` only. */
const J = 'job="$job"';
const JI = 'job="$job",instance=~"$instance"';
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's own variable syntax, read by Grafana.
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };

function target(expr, legendFormat, extra = {}) {
  return { expr, legendFormat, ...extra };
}

/** A time series panel: `targets` are [expr, legend] pairs. */
function graph(title, description, unit, targets, options = {}) {
  return {
    type: "timeseries",
    title,
    description,
    width: options.width ?? 8,
    height: 8,
    targets: targets.map(([expr, legend]) => target(expr, legend)),
    fieldConfig: {
      defaults: {
        unit,
        min: 0,
        custom: lineStyle(options.thresholds === undefined ? "off" : "line+area"),
        ...(options.thresholds === undefined ? {} : { thresholds: steps(options.thresholds) }),
      },
      overrides: [],
    },
    options: { legend: { displayMode: "list", placement: "bottom" }, tooltip: { mode: "multi", sort: "desc" } },
  };
}

/** Lines without points; thresholds drawn as a line and the area beyond it when the panel has them. */
function lineStyle(thresholds) {
  return {
    drawStyle: "line",
    lineWidth: 1,
    fillOpacity: 10,
    showPoints: "never",
    spanNulls: false,
    thresholdsStyle: { mode: thresholds },
  };
}

/** Threshold steps from [[value, color], …]: green below the first. */
function steps(marks) {
  return {
    mode: "absolute",
    steps: [{ color: "green", value: null }, ...marks.map(([value, color]) => ({ color, value }))],
  };
}

/** A single number (the last value), coloured by thresholds. */
function stat(title, description, unit, expr, marks, options = {}) {
  return {
    type: "stat",
    title,
    description,
    width: options.width ?? 4,
    height: 4,
    targets: [target(expr, title, { instant: true })],
    fieldConfig: {
      defaults: { unit, decimals: options.decimals, thresholds: options.thresholds ?? steps(marks) },
      overrides: [],
    },
    options: {
      reduceOptions: { calcs: ["lastNotNull"], fields: "", values: false },
      colorMode: "background",
      graphMode: "none",
      textMode: "value",
    },
  };
}

/** Threshold steps for a value that is good when high: red below `orangeFrom`, orange below `greenFrom`. */
function highIsGood(orangeFrom, greenFrom) {
  return {
    mode: "absolute",
    steps: [
      { color: "red", value: null },
      { color: "orange", value: orangeFrom },
      { color: "green", value: greenFrom },
    ],
  };
}

const ROWS = [
  [
    "Overview",
    [
      stat(
        "Instances up",
        "Targets of the job Prometheus scraped at the last try (up).",
        "short",
        `sum(up{${J}})`,
        [],
        {
          thresholds: highIsGood(1, 2),
        },
      ),
      stat(
        "Instances ready",
        'Instances whose /readyz answers ready (topwagers_readiness{status="ready"}).',
        "short",
        `sum(topwagers_readiness{${J},status="ready"})`,
        [],
        { thresholds: highIsGood(1, 2) },
      ),
      stat(
        "Server errors (5 min)",
        "Calls answered unavailable, internal, unknown or data_loss (the 5xx of REST), out of all calls. The alert: 5 % for 5 minutes.",
        "percentunit",
        `topwagers:rpc_server_errors:ratio_rate5m{${J}}`,
        [
          [0.01, "orange"],
          [0.05, "red"],
        ],
        { decimals: 2 },
      ),
      stat(
        "Board reads ≤ 250 ms (1 h)",
        "The latency SLO's indicator over the last hour: the share of board reads answered within 250 ms. Objective: 99.9 % over 30 days.",
        "percentunit",
        `1 - topwagers:board_reads_slow:ratio_rate1h{${J}}`,
        [],
        { thresholds: highIsGood(0.99, 0.999), decimals: 3 },
      ),
      stat(
        "Board reads ≤ 250 ms (3 d)",
        "The same over the last 3 days (the longest window the rules record).",
        "percentunit",
        `1 - topwagers:board_reads_slow:ratio_rate3d{${J}}`,
        [],
        { thresholds: highIsGood(0.99, 0.999), decimals: 3 },
      ),
      stat(
        "Oldest race step late",
        "How long the oldest race start, end or freeze not yet taken has been due. The alert: over 60 s for 2 minutes.",
        "s",
        `max(topwagers_race_step_overdue_seconds{${J}})`,
        [
          [30, "orange"],
          [60, "red"],
        ],
      ),
    ],
  ],
  [
    "Traffic and errors",
    [
      graph("Calls by protocol", "Calls answered per second, every procedure, by protocol.", "reqps", [
        [`sum by (protocol) (rate(topwagers_rpc_calls_total{${JI}}[$__rate_interval]))`, "{{protocol}}"],
      ]),
      graph("Refusals and errors by protocol and code", "Calls not answered ok, per second.", "reqps", [
        [
          `sum by (protocol, code) (rate(topwagers_rpc_calls_total{${JI},code!="ok"}[$__rate_interval]))`,
          "{{protocol}} {{code}}",
        ],
      ]),
      graph(
        "Server error ratio",
        "unavailable, internal, unknown and data_loss out of all calls (recording rule, 5-minute rate).",
        "percentunit",
        [[`topwagers:rpc_server_errors:ratio_rate5m{${J}}`, "server errors"]],
        { thresholds: [[0.05, "red"]] },
      ),
      graph("Calls by procedure", "Calls answered per second, by procedure.", "reqps", [
        [`sum by (procedure) (rate(topwagers_rpc_calls_total{${JI}}[$__rate_interval]))`, "{{procedure}}"],
      ]),
      graph("Rate-limited calls", "Calls refused with resource_exhausted, per second.", "reqps", [
        [`sum by (instance) (rate(topwagers_rate_limit_rejections_total{${JI}}[$__rate_interval]))`, "{{instance}}"],
      ]),
      graph("Wagers ingested", "Wagers received by RecordWagers per second, by result.", "short", [
        [`sum by (result) (rate(topwagers_ingest_wagers_total{${JI}}[$__rate_interval]))`, "{{result}}"],
      ]),
    ],
  ],
  [
    "Latency",
    [
      graph(
        "Board read latency",
        "GetTopAffiliateWagersByPeriod over REST, Connect, gRPC and gRPC-Web: p50, p90 and p99 from the histogram.",
        "s",
        [0.5, 0.9, 0.99].map((q) => [
          `histogram_quantile(${q}, sum by (le) (rate(topwagers_rpc_call_duration_seconds_bucket{${JI},${BOARD_READS}}[$__rate_interval])))`,
          `p${q * 100}`,
        ]),
        { thresholds: [[0.25, "red"]] },
      ),
      graph(
        "p99 by procedure and protocol",
        "The 99th percentile of every procedure, fleet-wide (recording rule, 5-minute rate).",
        "s",
        [[`topwagers:rpc_call_duration_seconds:quantile_rate5m{${J},quantile="0.99"}`, "{{procedure}} {{protocol}}"]],
      ),
      graph(
        "Latency SLO: slow board reads by window",
        "The share of board reads over 250 ms, by window (recording rules). Budget 0.1 %; the page fires at 14.4 × (1 h and 5 m) or 6 × (6 h and 30 m), the ticket at 3 × (1 d and 2 h) or 1 × (3 d and 6 h).",
        "percentunit",
        ["5m", "1h", "6h", "3d"].map((w) => [`topwagers:board_reads_slow:ratio_rate${w}{${J}}`, w]),
        { thresholds: [[0.001, "orange"]] },
      ),
    ],
  ],
  [
    "Live boards and streams",
    [
      graph("Open streams by protocol", "Live streams open now (boards' and races').", "short", [
        [`sum by (protocol) (topwagers_streams{${JI}})`, "{{protocol}}"],
      ]),
      graph("Live boards", "Distinct live boards with viewers, by instance.", "short", [
        [`sum by (instance) (topwagers_live_boards{${JI}})`, "{{instance}}"],
      ]),
      graph(
        "Stream disconnects by reason",
        "Streams ended per second: slow (a viewer that does not read) and limit (refused) are worth a look.",
        "short",
        [[`sum by (reason) (rate(topwagers_stream_disconnects_total{${JI}}[$__rate_interval]))`, "{{reason}}"]],
      ),
      graph("Stream messages", "Messages written to streams per second (boards and heartbeats).", "short", [
        [`sum by (protocol) (rate(topwagers_stream_messages_total{${JI}}[$__rate_interval]))`, "{{protocol}}"],
      ]),
      graph(
        "Live boards computed",
        "Board computations per second: full, incremental, or taken from the fleet.",
        "short",
        [[`sum by (kind) (rate(topwagers_board_computations_total{${JI}}[$__rate_interval]))`, "{{kind}}"]],
      ),
    ],
  ],
  [
    "Race clock",
    [
      graph(
        "Oldest race step late",
        "topwagers_race_step_overdue_seconds, the largest any instance read from the database. The alert: over 60 s for 2 minutes.",
        "s",
        [[`max(topwagers_race_step_overdue_seconds{${J}})`, "overdue"]],
        { thresholds: [[60, "red"]] },
      ),
      graph(
        "Race step failures",
        "Steps that failed, by step (each is tried again after 1 s, 2 s, 4 s … 5 min).",
        "short",
        [[`sum by (step) (increase(topwagers_race_step_failures_total{${JI}}[$__rate_interval]))`, "{{step}}"]],
      ),
    ],
  ],
  [
    "Webhooks",
    [
      graph(
        "Oldest due delivery",
        "Age of the oldest webhook delivery that is due and not being sent. The alert: over 300 s for 10 minutes.",
        "s",
        [[`max(topwagers_webhook_oldest_due_seconds{${J}})`, "oldest due"]],
        { thresholds: [[300, "red"]] },
      ),
      graph("Delivery attempts by result", "Attempts per second: delivered, retry, failed, disabled, lost.", "short", [
        [`sum by (result) (rate(topwagers_webhook_attempts_total{${JI}}[$__rate_interval]))`, "{{result}}"],
      ]),
      graph(
        "Attempts that failed",
        "Attempts not delivered out of all answered (recording rule, 30-minute rate). The alert: over 50 % for 30 minutes.",
        "percentunit",
        [[`topwagers:webhook_attempts_failed:ratio_rate30m{${J}}`, "failed"]],
        { thresholds: [[0.5, "red"]] },
      ),
      graph(
        "Deliveries finished",
        "Deliveries finished per second, by result (a failed one stays for replay).",
        "short",
        [[`sum by (result) (rate(topwagers_webhook_deliveries_total{${JI}}[$__rate_interval]))`, "{{result}}"]],
      ),
      graph(
        "Disabled endpoints",
        "Webhook endpoints disabled (by their owner, a 410, or 5 days of failures).",
        "short",
        [[`max(topwagers_webhook_disabled_endpoints{${J}})`, "disabled"]],
      ),
    ],
  ],
  [
    "Signing",
    [
      graph(
        "Signing failing",
        "1 while an instance's last attempt to sign with the purpose's key failed, by reason. The alert: for 5 minutes.",
        "short",
        [[`max by (purpose, reason) (topwagers_signing_failing{${J}})`, "{{purpose}} {{reason}}"]],
        { thresholds: [[1, "red"]] },
      ),
      graph("Live versions signed", "Live board and race versions signed per second (one per version).", "short", [
        [`sum(rate(topwagers_board_signatures_total{${JI}}[$__rate_interval]))`, "boards"],
        [`sum(rate(topwagers_race_signatures_total{${JI}}[$__rate_interval]))`, "races"],
      ]),
      graph(
        "Results log behind",
        "For how long each instance has seen log entries no checkpoint signs (the alert: the smallest over 60 s for 5 minutes).",
        "s",
        [[`max by (instance) (topwagers_results_log_behind_seconds{${JI}})`, "{{instance}}"]],
        { thresholds: [[60, "red"]] },
      ),
      graph("Results log size", "Entries appended to the log, and the newest checkpoint's tree size.", "short", [
        [`max(topwagers_results_log_entries{${J}})`, "entries"],
        [`max(topwagers_results_log_checkpoint_size{${J}})`, "checkpoint"],
      ]),
    ],
  ],
  [
    "Retention",
    [
      graph(
        "Retention runs",
        "Runs begun in the last hour, by result. The alert: tried for 2 hours, none finished.",
        "short",
        [[`sum by (result) (increase(topwagers_retention_runs_total{${JI}}[1h]))`, "{{result}}"]],
      ),
      graph(
        "Retention blocked",
        "1 while retention runs find a reason not to prune (an unregistered client connected, a horizon not yet read). The alert: for an hour.",
        "short",
        [[`max by (reason) (topwagers_retention_blocked{${J}})`, "{{reason}}"]],
        { thresholds: [[1, "red"]] },
      ),
      graph("Rows deleted", "Rows the retention job deleted in the last hour, by table.", "short", [
        [`sum by (table) (increase(topwagers_retention_deleted_rows_total{${JI}}[1h]))`, "{{table}}"],
      ]),
      graph(
        "Retention horizon age",
        "How far back the retention horizons are (only with WAGER_RETENTION_DAYS or HOURLY_ROLLUP_RETENTION_DAYS).",
        "s",
        [[`time() - max by (kind) (topwagers_retention_horizon_seconds{${J}} > 0)`, "{{kind}}"]],
      ),
    ],
  ],
  [
    "Database and Redis",
    [
      graph("Readiness by status", "Instances by what /readyz answers (topwagers_readiness).", "short", [
        [`sum by (status) (topwagers_readiness{${JI}})`, "{{status}}"],
      ]),
      graph(
        "Pool requests waiting",
        "Requests waiting for a database connection, by instance and pool. The alert: above 0 for 10 minutes.",
        "short",
        [[`sum by (instance, pool) (topwagers_db_pool_connections{${JI},state="waiting"})`, "{{instance}} {{pool}}"]],
      ),
      graph("Pool connections open", "Open database connections, by pool.", "short", [
        [`sum by (pool) (topwagers_db_pool_connections{${JI},state="open"})`, "{{pool}}"],
      ]),
      graph(
        "Change feed lag",
        "Seconds since each instance's last good read of the change feed; caches are bypassed above 0.9 s.",
        "s",
        [[`max by (instance) (topwagers_change_feed_lag_seconds{${JI}})`, "{{instance}}"]],
        { thresholds: [[5, "red"]] },
      ),
      graph(
        "Change feed reads failed",
        "Failed reads of the change feed per second: the database did not answer.",
        "short",
        [
          [
            `sum by (instance) (rate(topwagers_change_feed_polls_total{${JI},result="failed"}[$__rate_interval]))`,
            "{{instance}}",
          ],
        ],
      ),
      graph("Database events", "Node changes (failover) and replicas skipped.", "short", [
        [`sum by (event) (increase(topwagers_db_events_total{${JI}}[$__rate_interval]))`, "{{event}}"],
      ]),
      graph("Redis connected", "1 while limits are shared through Redis (only with REDIS_URL).", "short", [
        [`min by (instance) (topwagers_redis_connected{${JI}})`, "{{instance}}"],
      ]),
      graph(
        "Fleet members",
        "Instances of the fleet alive, as each instance reads it (only with REDIS_URL).",
        "short",
        [[`max by (instance) (topwagers_fleet_members{${JI}})`, "{{instance}}"]],
      ),
      graph("Result cache hit ratio", "Leaderboard answers served from the cache, out of all.", "percentunit", [
        [
          `sum(rate(topwagers_result_cache_hits_total{${JI}}[$__rate_interval])) / (sum(rate(topwagers_result_cache_hits_total{${JI}}[$__rate_interval])) + sum(rate(topwagers_result_cache_misses_total{${JI}}[$__rate_interval])))`,
          "hit ratio",
        ],
      ]),
    ],
  ],
  [
    "Processes",
    [
      graph("CPU", "CPU seconds per second, by instance.", "short", [
        [`sum by (instance) (rate(topwagers_process_cpu_seconds_total{${JI}}[$__rate_interval]))`, "{{instance}}"],
      ]),
      graph("Resident memory", "Resident set size, by instance.", "bytes", [
        [`max by (instance) (topwagers_process_resident_memory_bytes{${JI}})`, "{{instance}}"],
      ]),
      graph("Event loop lag p99", "Node's event loop delay, 99th percentile, by instance.", "s", [
        [`max by (instance) (topwagers_nodejs_eventloop_lag_p99_seconds{${JI}})`, "{{instance}}"],
      ]),
    ],
  ],
];

/** The rows and their panels laid out on Grafana's 24-column grid, with ids and the datasource variable. */
function laidOut(rows) {
  const panels = [];
  let id = 1;
  let y = 0;
  for (const [title, inRow] of rows) {
    panels.push({ type: "row", title, id: id++, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const { width, height, targets, ...panel } of inRow) {
      if (x + width > 24) {
        x = 0;
        y += rowHeight;
        rowHeight = 0;
      }
      const refIds = targets.map((one, i) => ({ refId: String.fromCharCode(65 + i), datasource: DATASOURCE, ...one }));
      panels.push({
        ...panel,
        id: id++,
        datasource: DATASOURCE,
        gridPos: { h: height, w: width, x, y },
        targets: refIds,
      });
      x += width;
      rowHeight = Math.max(rowHeight, height);
    }
    y += rowHeight;
  }
  return panels;
}

function variable(name, label, query, extra = {}) {
  return {
    name,
    label,
    type: "query",
    datasource: DATASOURCE,
    query: { query, refId: `${name}-variable` },
    definition: query,
    refresh: 2,
    sort: 1,
    hide: 0,
    ...extra,
  };
}

/** The Grafana dashboard JSON model (import it, or provision it: docs/operations.md#alerts-and-dashboards). */
export function dashboard() {
  return {
    title: "topwagers",
    uid: "topwagers-oncall",
    description:
      "What an on-call engineer opens first: traffic and errors by protocol, latency and the board read SLO, live streams, the race clock, webhooks, signing, retention, the database and Redis. Made by scripts/monitoring.mjs; runbooks in docs/operations.md.",
    tags: ["topwagers"],
    editable: true,
    graphTooltip: 1,
    refresh: "30s",
    schemaVersion: 39,
    version: 1,
    time: { from: "now-6h", to: "now" },
    timepicker: {},
    timezone: "utc",
    annotations: { list: [] },
    links: [],
    templating: {
      list: [
        { name: "datasource", label: "Data source", type: "datasource", query: "prometheus", hide: 0, refresh: 1 },
        variable("job", "Job", "label_values(topwagers_build_info, job)", {
          current: { selected: true, text: "topwagers", value: "topwagers" },
        }),
        variable("instance", "Instance", 'label_values(topwagers_build_info{job="$job"}, instance)', {
          multi: true,
          includeAll: true,
          allValue: ".*",
          current: { selected: true, text: ["All"], value: ["$__all"] },
        }),
      ],
    },
    panels: laidOut(ROWS),
  };
}

export function dashboardText() {
  return `${JSON.stringify(dashboard(), null, 2)}\n`;
}

/** Each output file and the text it should hold. */
export function outputs() {
  return [
    [PROMETHEUS_RULE, prometheusRule(readFileSync(join(root, RULES), "utf8"))],
    [DASHBOARD, dashboardText()],
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes("--check");
  let stale = 0;
  for (const [file, text] of outputs()) {
    let current = "";
    try {
      current = readFileSync(join(root, file), "utf8");
    } catch {}
    if (current === text) continue;
    if (check) {
      console.error(`${file} is not what scripts/monitoring.mjs writes: run node scripts/monitoring.mjs`);
      stale += 1;
    } else {
      writeFileSync(join(root, file), text);
      console.log(`wrote ${file}`);
    }
  }
  process.exit(stale === 0 ? 0 : 1);
}
