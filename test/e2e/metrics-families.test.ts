/**
 * Metrics follow Prometheus' conventions and the docs (issue 20, item 7): every family a real server
 * exports (with the result cache, the change feed, Redis, live boards and wager pruning on) is in docs/operations.md's
 * table with the same type, and every family there is exported; running totals are `…_total`
 * counters; `topwagers_build_info` names the build; METRICS_PORT serves /metrics alone.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestDatabase } from "../support/database.js";
import { freePort, type ServerProcess, startServerProcess } from "../support/processes.js";
import { RELEASE } from "../support/release.js";

const database = useTestDatabase("metrics_families");
let server: ServerProcess;
let metricsPort: number;
let internalPort: number;

beforeAll(async () => {
  metricsPort = await freePort();
  server = await startServerProcess({
    DATABASE_URL: database.url,
    REDIS_URL: "redis://127.0.0.1:6379",
    CACHE_TTL_MS: "10000",
    METRICS_PORT: String(metricsPort),
    INGEST_TOKEN: "metrics-families-ingest-token",
    // Registers topwagers_retention_horizon_seconds (no run happens within the test: the first is 10 minutes on).
    WAGER_RETENTION_DAYS: "400",
  });
  const internal = await server.waitForLog((line) => line.msg.startsWith("internal listener"));
  internalPort = Number(internal.port);
}, 30_000);

afterAll(async () => {
  await server?.stop();
});

/** The documented families: name (or a `prefix*` pattern) → type ("" for the prefix rows), from the table. */
function documentedFamilies(): Map<string, string> {
  const text = readFileSync("docs/operations.md", "utf8");
  const section = text.slice(text.indexOf("## Metrics\n"), text.indexOf("\n## Logs\n"));
  const table = section.slice(0, section.indexOf("**Renamed metrics**"));
  const families = new Map<string, string>();
  for (const row of table.split("\n").filter((l) => l.startsWith("| `topwagers_"))) {
    const [names, type] = row
      .split("|")
      .slice(1, 3)
      .map((cell) => cell.trim());
    for (const name of (names ?? "").matchAll(/`(topwagers_[a-z_]+\*?)`/g)) families.set(name[1] as string, type ?? "");
  }
  return families;
}

/** The families a /metrics text declares: name → type, from its `# TYPE` lines. */
function exportedFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(match[1] as string, match[2] as string);
  return families;
}

async function scrape(): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

describe("the families on /metrics are the documented ones", () => {
  it("every exported family is in the table with its type, and every documented family is exported", async () => {
    const exported = exportedFamilies(await scrape());
    const documented = documentedFamilies();
    const prefixes = [...documented.keys()].filter((n) => n.endsWith("*")).map((n) => n.slice(0, -1));
    expect(prefixes).toEqual(["topwagers_process_", "topwagers_nodejs_"]);
    const ours = [...exported].filter(([name]) => !prefixes.some((p) => name.startsWith(p)));
    const documentedExact = [...documented].filter(([name]) => !name.endsWith("*"));
    expect(new Map(ours)).toEqual(new Map(documentedExact));
    // prom-client's own families are all under the two documented prefixes.
    for (const name of exported.keys()) expect(name.startsWith("topwagers_"), name).toBe(true);
  });

  it("running totals are counters named …_total; gauges never end in _total", async () => {
    const exported = exportedFamilies(await scrape());
    for (const [name, type] of exported) {
      if (name.startsWith("topwagers_process_") || name.startsWith("topwagers_nodejs_")) continue;
      expect({ name, type }).toEqual({ name, type: name.endsWith("_total") ? "counter" : type });
      if (type === "counter") expect(name.endsWith("_total"), name).toBe(true);
    }
    for (const name of [
      "topwagers_result_cache_hits_total",
      "topwagers_result_cache_misses_total",
      "topwagers_change_feed_polls_total",
      "topwagers_change_feed_changes_total",
      "topwagers_change_feed_invalidations_total",
    ]) {
      expect(exported.get(name), name).toBe("counter");
    }
    expect(exported.get("topwagers_change_feed_lag_seconds")).toBe("gauge");
  });

  it("topwagers_build_info{version,commit,node_version} 1", async () => {
    const text = await scrape();
    expect(text).toContain(
      `\ntopwagers_build_info{version="${RELEASE.version}",commit="${RELEASE.commit}",node_version="${process.versions.node}"} 1\n`,
    );
  });

  it("the change feed counts its polls as a counter that only goes up", async () => {
    const polls = async () => {
      const line = (await scrape())
        .split("\n")
        .find((l) => l.startsWith('topwagers_change_feed_polls_total{result="ok"} '));
      return Number(line?.split(" ")[1]);
    };
    const first = await polls();
    await new Promise((resolve) => setTimeout(resolve, 700)); // the feed polls every 200 ms
    expect(await polls()).toBeGreaterThan(first);
  });
});

describe("METRICS_PORT serves /metrics alone", () => {
  it("anything else there is 404, and the internal listener no longer serves /metrics", async () => {
    for (const [method, path] of [
      ["GET", "/healthz"],
      ["GET", "/"],
      ["POST", "/metrics"],
      ["POST", "/topwagers.v1.WagerIngestService/RecordWagers"],
      ["POST", "/topwagers.v1.ApiKeyService/ListApiKeys"],
    ] as const) {
      const response = await fetch(`http://127.0.0.1:${metricsPort}${path}`, { method });
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
    }
    expect((await fetch(`http://127.0.0.1:${internalPort}/metrics`)).status).toBe(404);
    // The internal listener still serves its services.
    const health = await fetch(`http://127.0.0.1:${internalPort}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(health.status).toBe(200);
  });

  it("the start-up log names the metrics listener", () => {
    expect(server.logs.find((l) => l.msg.startsWith("metrics (GET /metrics alone) on"))).toMatchObject({
      level: 30,
      port: metricsPort,
      host: "127.0.0.1",
      msg: `metrics (GET /metrics alone) on 127.0.0.1:${metricsPort}`,
    });
  });
});
