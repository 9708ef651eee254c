/**
 * The shipped rules in a real Prometheus (issue 51): Debian's prometheus binary, in a temporary directory of its
 * own on a free loopback port, scrapes two real instances (the built server, one database) every second and
 * evaluates deploy/monitoring/topwagers.rules.yaml every second. A healthy fleet fires nothing; a race whose freeze
 * the database refuses fires TopwagersRaceStepOverdue; an instance stopped fires TopwagersInstanceDown for it alone.
 *
 * The rules Prometheus loads are the shipped file with one change: every alert's `for:` is 2s, so the test waits
 * seconds, not minutes (the test checks that nothing else differs; the shipped durations are what
 * deploy/monitoring/tests/ tests with promtool). Thresholds are the shipped ones: the race is made over a period that
 * ended an hour ago (allowPast), so its steps are already hours late when its freeze first fails, over the alert's
 * 60 s.
 *
 * How the freeze is made to fail: a trigger refuses every insert into race_results (SIGNAL SQLSTATE '45000'), as the
 * database would refuse a write it cannot take (a full disk, a constraint, a missing privilege); it is the trick of
 * test/integration/race-clock-failures.test.ts, here reaching two real processes through their database. A revoked
 * privilege would need a runtime user with table-level grants; a locked table would hang the freeze, not fail it.
 * Prometheus is stopped by its PID in afterAll, also when a test fails.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { useTestDatabase } from "../support/database.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { RULES_FILE } from "../support/monitoring.js";
import { withoutMovedClock } from "../support/moved-clock.js";
import { freePort, type ServerProcess, sleep, startServerProcess, stopChild } from "../support/processes.js";
import { raceServiceCall } from "../support/rest.js";

const PROMETHEUS = "/usr/bin/prometheus";
const AFFILIATE = "monitoring-aff";
/** The `for:` every alert gets in the test's copy of the rules. */
const TEST_FOR = "2s";

const database = useTestDatabase("monitoring_prometheus");
const servers: { server: ServerProcess; target: string }[] = [];
let prometheus: ChildProcess | undefined;
let prometheusUrl = "";
let prometheusLog = "";
let dir: string | undefined;

interface RuleFile {
  groups: { name: string; rules: { alert?: string; for?: string; [key: string]: unknown }[] }[];
}

/** The shipped rules with every alert's `for:` set to TEST_FOR, and nothing else changed (checked). */
async function rulesForTheTest(): Promise<string> {
  const shipped = parse(await readFile(RULES_FILE, "utf8")) as RuleFile;
  const copy = structuredClone(shipped);
  for (const rule of copy.groups.flatMap((group) => group.rules)) if (rule.alert !== undefined) rule.for = TEST_FOR;
  const withoutFor = (file: RuleFile) => file.groups.map((group) => group.rules.map(({ for: _for, ...rule }) => rule));
  expect(withoutFor(copy)).toEqual(withoutFor(shipped));
  return stringify(copy);
}

async function startPrometheus(targets: readonly string[]): Promise<void> {
  dir = await mkdtemp(path.join(tmpdir(), "topwagers-prometheus-"));
  await writeFile(path.join(dir, "topwagers.rules.yaml"), await rulesForTheTest());
  const config = {
    global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
    rule_files: ["topwagers.rules.yaml"],
    scrape_configs: [{ job_name: "topwagers", static_configs: [{ targets }] }],
  };
  await writeFile(path.join(dir, "prometheus.yml"), stringify(config));
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { cwd: dir, env: withoutMovedClock(), stdio: ["ignore", "ignore", "pipe"] },
  );
  prometheus.stderr?.on("data", (chunk: Buffer) => {
    prometheusLog += chunk.toString("utf8");
  });
  await until("Prometheus is ready", async () => (await fetch(`${prometheusUrl}/-/ready`)).status === 200, 20_000);
}

/** Polls `check` every 250 ms until it is true; fails after `timeoutMs`, naming `what`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (prometheus !== undefined && prometheus.exitCode !== null) break;
    await sleep(250);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (${String(last ?? "")})\nPrometheus said:\n${prometheusLog}`);
}

interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: "pending" | "firing";
  value: string;
}

async function alerts(): Promise<Alert[]> {
  const answer = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } };
  return answer.data.alerts;
}

async function firing(name: string): Promise<Alert[]> {
  return (await alerts()).filter((alert) => alert.state === "firing" && alert.labels.alertname === name);
}

/** An instant query's samples: labels and value. */
async function query(expr: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const answer = (await response.json()) as {
    data: { result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  return answer.data.result.map((sample) => ({ metric: sample.metric, value: Number(sample.value[1]) }));
}

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    const metricsPort = await freePort();
    const server = await startServerProcess({ DATABASE_URL: database.url, METRICS_PORT: String(metricsPort) });
    servers.push({ server, target: `127.0.0.1:${metricsPort}` });
  }
  for (const { server } of servers) {
    await until("the instance is ready", async () => (await fetch(`${server.baseUrl}/readyz`)).status === 200);
  }
  await startPrometheus(servers.map((one) => one.target));
}, 60_000);

afterAll(async () => {
  await stopChild(prometheus);
  for (const { server } of servers) await server.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("the shipped rules in a real Prometheus over two instances", () => {
  it("a healthy fleet: both instances up and ready, and no alert pending or firing", async () => {
    await until("both targets up and ready", async () => {
      const ready = await query('sum(topwagers_readiness{job="topwagers",status="ready"})');
      const up = await query('sum(up{job="topwagers"})');
      return up[0]?.value === 2 && ready[0]?.value === 2;
    });
    // Four evaluations after both are up: long enough for a 2 s `for:` to fire anything that holds.
    await sleep(4_000);
    expect((await alerts()).map((alert) => [alert.labels.alertname, alert.state])).toEqual([]);
  });

  it("TopwagersRaceStepOverdue fires when the database refuses a race's freeze", async () => {
    await database.db.write.query(
      `CREATE TRIGGER refuse_race_results BEFORE INSERT ON race_results FOR EACH ROW
         SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the monitoring test'`,
    );
    const now = Math.floor(Date.now() / 1000);
    const start = now - 7_200;
    const end = now - 3_600;
    await addUsers(database.db, [{ id: "mon-u1", affiliateId: AFFILIATE, username: "ann", avatar: "" }]);
    await addWagers(database.db, [wager("mon-u1", "50", end - 60)]);
    const key = await createKey(database.db, AFFILIATE);
    const created = await raceServiceCall(servers[0]?.server.baseUrl ?? "", key.secret, "CreateRace", {
      rules: {
        slug: "late",
        title: "Late race",
        startTimestamp: String(start),
        endTimestamp: String(end),
        prizes: ["10"],
        reviewSeconds: 0,
      },
      allowPast: true,
    });
    const raceId = String((created.race as { id: string }).id);

    await until("TopwagersRaceStepOverdue fires", async () => (await firing("TopwagersRaceStepOverdue")).length > 0);
    const [alert] = await firing("TopwagersRaceStepOverdue");
    expect(alert?.labels).toEqual({ alertname: "TopwagersRaceStepOverdue", job: "topwagers", severity: "critical" });
    // A race made as history owes the announcement of its start too, which its freeze makes: the oldest step not
    // taken is its start, due two hours ago. The alert's value is how long ago that was when an instance last read it.
    const late = Number(alert?.value);
    expect(late).toBeGreaterThanOrEqual(now - start);
    expect(late).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) - start);
    expect(alert?.annotations.summary).toMatch(/^a race's start, end or freeze is 2h 0m \d+s late$/);
    expect(alert?.annotations.runbook_url).toBe("docs/operations.md#topwagersracestepoverdue");
    // What the runbook sends the on-call engineer to: the failures by step, and the race's warn line.
    const failures = await query('sum by (step) (topwagers_race_step_failures_total{job="topwagers"}) > 0');
    expect(failures.map((sample) => sample.metric.step)).toEqual(["freeze"]);
    const logged = servers.flatMap(({ server }) =>
      server.logs.filter((line) => line.msg === `race ${raceId}: its freeze failed; tried again later`),
    );
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0]).toMatchObject({ level: 40, raceId, affiliateId: AFFILIATE, slug: "late", step: "freeze" });
  });

  it("TopwagersInstanceDown fires for the stopped instance only, and the fleet is not down", async () => {
    const [kept, stopped] = servers;
    await stopped?.server.stop();
    await until("TopwagersInstanceDown fires", async () => (await firing("TopwagersInstanceDown")).length > 0);
    const down = await firing("TopwagersInstanceDown");
    expect(down.map((alert) => alert.labels)).toEqual([
      { alertname: "TopwagersInstanceDown", instance: stopped?.target, job: "topwagers", severity: "warning" },
    ]);
    expect(down[0]?.annotations.summary).toBe(`topwagers instance ${stopped?.target} is down`);
    expect(await query('up{job="topwagers"} == 1')).toEqual([
      { metric: { __name__: "up", instance: kept?.target, job: "topwagers" }, value: 1 },
    ]);
    expect(await firing("TopwagersNoInstanceUp")).toEqual([]);
  });
});
