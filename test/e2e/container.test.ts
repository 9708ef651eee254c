/**
 * The container image (issue 13): `scripts/image.sh` (what `npm run image` runs) builds it with
 * podman, once for the file. It then runs (issue 20, item 9) by the commands docs/operations.md shows,
 * read from the document and run as written on this machine (with this test's image tag, container
 * name, ports and throwaway database): with --network=host against this machine's MariaDB and Redis,
 * it answers REST and gRPC (@grpc/grpc-js), runs the CLI, and stops on SIGTERM promptly with exit 0.
 * Then deploy/kubernetes/ is played with `podman kube play` (what differs from a cluster: the
 * Kubernetes section of docs/operations.md): the pod reaches MariaDB, is ready, answers REST, stops
 * cleanly. The documented upgrade (issue 38) runs as written on a database left at schema 8, step by step, then the
 * documented rollback to that backup and the upgrade again (issue 47). Containers, pods, secrets and the test's image tag are removed afterwards, also when a
 * step fails.
 *
 * Needs podman and runc (CI installs them); outside CI the file is skipped when podman is missing.
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import type { Pool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { grpcJsMethod } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { freePort, sleep } from "../support/processes.js";
import { RELEASE, VERSION_LINE } from "../support/release.js";
import { restTop } from "../support/rest.js";

/** The parts of a manifest this test reads or changes. */
interface Manifest {
  kind: string;
  metadata: { name: string };
  stringData?: Record<string, string>;
  spec: {
    replicas?: number;
    ports?: { name?: string; port: number; targetPort?: string | number }[];
    maxUnavailable?: number;
    ingress?: { from?: Record<string, unknown>[]; ports: { port: number }[] }[];
    template: { spec: { containers: Container[] } };
  };
}
interface Container {
  image: string;
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
  startupProbe?: { httpGet: { path: string; port: string | number } };
  livenessProbe?: { httpGet: { path: string; port: string | number } };
  readinessProbe?: { httpGet: { path: string; port: string | number } };
}

const MANIFEST_FILES = [
  "deployment.yaml",
  "service.yaml",
  "secret.example.yaml",
  "poddisruptionbudget.yaml",
  "networkpolicy.yaml",
];

function manifests(): Manifest[] {
  return MANIFEST_FILES.flatMap((file) =>
    parseAllDocuments(readFileSync(path.join("deploy/kubernetes", file), "utf8")).map((d) => d.toJS() as Manifest),
  );
}

const run = promisify(execFile);
const podmanInstalled = (() => {
  try {
    execFileSync("podman", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!podmanInstalled && process.env.CI === "true") throw new Error("CI must have podman (.ci/run installs it)");

const env = { ...process.env, CONTAINERS_CONF: path.resolve("containers/containers.conf") };
const suffix = `${process.pid}-${randomBytes(3).toString("hex")}`;
const tag = `localhost/topwagers:test-${suffix}`;
const name = `topwagers-test-${suffix}`;
const AVATAR = "https://cdn.example.com/a.png";
/** The REST answer for the first day of January 2025, top 10, wherever the image runs. */
const DAY_BOARD = {
  status: 200,
  body: {
    data: [
      { username: "alice", avatar: AVATAR, totalWagered: 12.75 },
      { username: "bob", avatar: AVATAR, totalWagered: 5 },
    ],
    errors: null,
  },
};

function podman(...args: string[]) {
  return run("podman", args, { env, maxBuffer: 16 * 1024 * 1024 });
}

/** A command of a documented block (continuation lines joined), with the comment after it. */
interface DocumentedCommand {
  command: string;
  comment: string;
}

/**
 * The commands of the docs/operations.md block that holds `marker`, each with the comment after it, and the
 * block's first line (the CONTAINERS_CONF export) apart.
 */
function documentedBlock(marker: string): { setUp: string; commands: DocumentedCommand[] } {
  const doc = readFileSync("docs/operations.md", "utf8");
  const block = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string).find((b) => b.includes(marker));
  if (block === undefined) throw new Error(`docs/operations.md has no block with \`${marker}\``);
  const commands: DocumentedCommand[] = [];
  let pending = "";
  for (const line of block.split("\n").filter((l) => l.trim() !== "")) {
    const continued = line.endsWith("\\");
    const [code, comment = ""] = continued ? [line] : line.split(/\s+# /, 2);
    pending += `${code}\n`;
    if (!continued) {
      commands.push({ command: pending.trimEnd(), comment });
      pending = "";
    }
  }
  const [setUp, ...rest] = commands;
  return { setUp: setUp?.command ?? "", commands: rest };
}

/** docs/operations.md's block that runs the image (the one that also creates a key with the CLI). */
function documentedRun(): { setUp: string; commands: DocumentedCommand[] } {
  return documentedBlock("keys create --affiliate aff-1");
}

/** docs/operations.md's `podman kube play` walkthrough: its block, as one bash script. */
function documentedKubeWalk(): string {
  const doc = readFileSync("docs/operations.md", "utf8");
  const block = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1] as string)
    .find((b) => b.includes("podman kube play"));
  if (block === undefined) throw new Error("docs/operations.md has no block with `podman kube play`");
  return block;
}

/** The `msg` of every JSON log line the container wrote (stdout and stderr), in order. */
async function logMessages(container: string): Promise<string[]> {
  const logs = await podman("logs", container);
  return `${logs.stdout}${logs.stderr}`
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => (JSON.parse(l) as { msg: string }).msg);
}

/** A documented command as this test runs it: its own tag, name, ports and database; in bash, after the set-up line. */
function asRun(command: string, setUp: string, ports: { public: number; internal: number }, databaseUrl: string) {
  const script = command
    .replaceAll("localhost/topwagers:latest", tag)
    .replace(/--name topwagers\b/, `--name ${name}`)
    .replace(/^podman (stop|rm) topwagers$/, `podman $1 ${name}`)
    .replaceAll("mysql://topwagers:secret@127.0.0.1:3306/topwagers", databaseUrl)
    .replaceAll("8080", String(ports.public))
    .replaceAll("9090", String(ports.internal));
  return run("bash", ["-c", `set -e\n${setUp}\n${script}`], { env: process.env, maxBuffer: 16 * 1024 * 1024 });
}

/**
 * What 0.1.0 wrote at schema 8 (before scopes, weighted sums and races), as its own statements would have: DAY_BOARD's
 * users and wagers with their four rollups, and a secret key. Answers the key's secret.
 */
async function seedAsAtSchema8(pool: Pool): Promise<string> {
  const at = JAN_1_2025;
  await pool.query("INSERT INTO affiliates (external_id, created_at) VALUES ('up-aff', ?)", [at]);
  await pool.query(
    "INSERT INTO users (external_id, affiliate_id, username, avatar_url, updated_at) VALUES ('up-u1', 1, 'alice', ?, ?), ('up-u2', 1, 'bob', ?, ?)",
    [AVATAR, at, AVATAR, at],
  );
  await pool.query(
    "INSERT INTO wagers (external_id, user_id, affiliate_id, amount, placed_at) VALUES ('up-w1', 1, 1, '10.50', ?), ('up-w2', 1, 1, '2.25', ?), ('up-w3', 2, 1, '5', ?)",
    [at + 60, at + 7200, at + 3600],
  );
  await pool.query(
    "INSERT INTO wager_hourly (affiliate_id, bucket, user_id, total, wagers) VALUES (1, ?, 1, '10.50', 1), (1, ?, 1, '2.25', 1), (1, ?, 2, '5', 1)",
    [at, at + 7200, at + 3600],
  );
  // 1 January 2025 starts its day, its half-month and its month.
  for (const table of ["wager_daily", "wager_halfmonthly", "wager_monthly"]) {
    await pool.query(
      `INSERT INTO ${table} (affiliate_id, bucket, user_id, total, wagers) VALUES (1, ?, 1, '12.75', 2), (1, ?, 2, '5', 1)`,
      [at, at],
    );
  }
  const key = generateApiKey();
  await pool.query(
    "INSERT INTO api_keys (id, key_hash, affiliate_id, label, created_at) VALUES (?, ?, 1, 'made by 0.1.0', ?)",
    [key.id, key.hash, at],
  );
  return key.secret;
}

/** A shell step's exit code and output, whether it failed or not. */
async function exitAndOutput(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("bash", ["-c", script], { env: process.env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe.skipIf(!podmanInstalled)("the container image", () => {
  let database: TestDatabase;
  let port: number;
  let key: string;
  let keyId: string;
  let built = false;
  let ports: { public: number; internal: number };
  let documented: ReturnType<typeof documentedRun>;
  /** The first day of January over REST on this port: the status and the parsed body. */
  const dayOverRest = async (on: number) => {
    const reply = await restTop(`http://127.0.0.1:${on}`, key, {
      startTimestamp: JAN_1_2025,
      endTimestamp: JAN_1_2025 + 86_399,
      numUsers: 10,
    });
    return { status: reply.status, body: reply.json };
  };

  beforeAll(async () => {
    database = await createTestDatabase("container");
    await addUsers(database.db, [
      { id: "c-u1", affiliateId: "c-aff", username: "alice", avatar: AVATAR },
      { id: "c-u2", affiliateId: "c-aff", username: "bob", avatar: AVATAR },
    ]);
    await addWagers(database.db, [
      wager("c-u1", "10.50", JAN_1_2025 + 60),
      wager("c-u1", "2.25", JAN_1_2025 + 7200),
      wager("c-u2", "5", JAN_1_2025 + 3600),
    ]);
    ({ secret: key, id: keyId } = await createKey(database.db, "c-aff"));
    await run("bash", ["scripts/image.sh"], {
      env: { ...env, IMAGE_TAG: tag, IMAGE_NO_COMPILE: "1" },
      maxBuffer: 64 * 1024 * 1024,
    });
    built = true;
    port = await freePort();
    const internalPort = await freePort();
    ports = { public: port, internal: internalPort };
    documented = documentedRun();
    // As written: the set-up line exports the repository's containers.conf (hosts like this one).
    expect(documented.setUp).toBe("export CONTAINERS_CONF=$PWD/containers/containers.conf");
    expect(documented.commands.map((c) => c.command.split(/\s/, 3).join(" "))).toEqual([
      "podman run -d",
      "curl -sf --retry",
      "podman run --rm",
      "podman stop topwagers",
      "podman rm topwagers",
    ]);
    const [start, ready] = documented.commands;
    await asRun(start?.command ?? "", documented.setUp, ports, database.url);
    const answer = await asRun(ready?.command ?? "", documented.setUp, ports, database.url).catch(async (error) => {
      const logs = await podman("logs", name).catch(() => ({ stdout: "", stderr: "" }));
      throw new Error(`the container did not become ready (${error}):\n${logs.stdout}${logs.stderr}`);
    });
    // The readiness answer the document shows (its commit an example), and the schema and release of this build.
    const shown = JSON.parse(answer.stdout) as { commit: string };
    expect({ ...shown, commit: "3f2a9c0d1b4e" }).toEqual(JSON.parse(ready?.comment ?? ""));
    expect(shown).toEqual({ status: "ready", schemaVersion: LATEST_SCHEMA_VERSION, ...RELEASE });
  }, 240_000);

  afterAll(async () => {
    await podman("rm", "--force", "--time", "0", name).catch(() => undefined);
    if (built) await podman("rmi", "--force", tag).catch(() => undefined);
    await database?.drop();
  }, 60_000);

  it("runs as a non-root user", async () => {
    const { stdout } = await podman(
      "exec",
      name,
      "/usr/local/bin/node",
      "-p",
      "process.getuid() + ':' + process.getgid()",
    );
    expect(stdout).toBe("10001:10001\n");
  });

  it("its entrypoint is the topwagers command: --help prints the usage, and nothing listens", async () => {
    const { stdout } = await podman("run", "--rm", "--network=host", tag, "--help");
    expect(stdout.startsWith("usage: topwagers <command> [options]\n\n  topwagers serve\n")).toBe(true);
    const version = await podman("run", "--rm", tag, "--version");
    expect(version.stdout).toBe(VERSION_LINE);
  }, 60_000);

  it("its labels name the release: org.opencontainers.image.version and .revision", async () => {
    const { stdout } = await podman("image", "inspect", "--format", "{{json .Labels}}", tag);
    expect(JSON.parse(stdout)).toMatchObject({
      "org.opencontainers.image.title": "topwagers",
      "org.opencontainers.image.version": RELEASE.version,
      "org.opencontainers.image.revision": RELEASE.commit,
    });
  });

  it("runs CLI commands: keys list", async () => {
    const { stdout } = await podman(
      "run",
      "--rm",
      "--network=host",
      "-e",
      `DATABASE_URL=${database.url}`,
      tag,
      "keys",
      "list",
    );
    expect(stdout).toContain(keyId);
    expect(stdout).toContain("c-aff");
  }, 60_000);

  it("the documented CLI command creates a key with the same image", async () => {
    const cli = documented.commands[2];
    const { stdout } = await asRun(cli?.command ?? "", documented.setUp, ports, database.url);
    expect(cli?.comment).toBe("the CLI, same image: Created key key_… for affiliate aff-1.");
    expect(stdout).toMatch(/^Created key key_[A-Za-z0-9_-]+ for affiliate aff-1\.\n\n {2}tw_[A-Za-z0-9_-]+\n/);
  }, 60_000);

  it("answers REST", async () => {
    expect(await dayOverRest(port)).toEqual(DAY_BOARD);
  });

  it("answers gRPC (@grpc/grpc-js)", async () => {
    const method = grpcJsMethod("GetTopAffiliateWagersByPeriod", { longs: String, defaults: true });
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${key}`);
      const response = await new Promise<unknown>((resolve, reject) => {
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          { startTimestamp: String(JAN_1_2025), endTimestamp: String(JAN_1_2025 + 86_399), numUsers: 10 },
          metadata,
          (error, value) => (error === null ? resolve(value) : reject(error)),
        );
      });
      const entries = (response as { data: Record<string, unknown>[] }).data;
      expect(entries.map((e) => [e.username, e.totalWageredDecimal, e.userId, e.rank])).toEqual([
        ["alice", "12.75", "c-u1", 1],
        ["bob", "5", "c-u2", 2],
      ]);
    } finally {
      client.close();
    }
  });

  it("stops on SIGTERM promptly and cleanly (the server drains and exits 0 as PID 1)", async () => {
    const started = Date.now();
    // The document's `podman stop topwagers`: SIGTERM, and SIGKILL only after podman's 10 s.
    await asRun(documented.commands[3]?.command ?? "", documented.setUp, ports, database.url);
    const { stdout } = await podman("wait", name);
    const seconds = (Date.now() - started) / 1000;
    expect(stdout.trim()).toBe("0");
    expect(seconds).toBeLessThan(5);
    expect((await logMessages(name)).slice(-2)).toEqual(["shutting down: finishing in-flight requests", "stopped"]);
    await asRun(documented.commands[4]?.command ?? "", documented.setUp, ports, database.url); // podman rm
    await expect(podman("container", "exists", name)).rejects.toThrow();
  }, 30_000);

  describe("deploy/kubernetes/ under podman kube play", () => {
    const kubeName = `topwagers-kube-${suffix}`;
    const pod = `${kubeName}-pod-0`;
    const container = `${pod}-topwagers`;
    const secretName = `${kubeName}-secret`;
    let work: string;
    let kubePorts: { public: number; internal: number; metrics: number };
    let stopped: { seconds: number; exitCode: string } | undefined;

    beforeAll(async () => {
      work = mkdtempSync(path.join(tmpdir(), "topwagers-kube-"));
      kubePorts = { public: await freePort(), internal: await freePort(), metrics: await freePort() };
      const all = manifests();
      // The Secret as the podman secret `secretKeyRef` reads: a JSON object of base64 values (podman 4.3).
      const secret = all.find((m) => m.kind === "Secret");
      const values = { ...secret?.stringData, "database-url": database.url };
      const encoded = Object.fromEntries(
        Object.entries(values).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")]),
      );
      writeFileSync(path.join(work, "secret.json"), JSON.stringify(encoded));
      await podman("secret", "create", secretName, path.join(work, "secret.json"));
      // What differs from a cluster (docs/operations.md, Kubernetes): one pod on the host network with free
      // ports, the test's image and the local Redis, the secret under the test's name.
      const played = all
        .filter((m) => m.kind !== "Secret")
        .map((m) => {
          if (m.kind !== "Deployment") return m;
          m.metadata.name = kubeName;
          m.spec.replicas = 1;
          const c = m.spec.template.spec.containers[0] as Container;
          c.image = tag;
          delete c.ports;
          const setting: Record<string, string> = {
            PORT: String(kubePorts.public),
            INTERNAL_PORT: String(kubePorts.internal),
            METRICS_PORT: String(kubePorts.metrics),
            REDIS_URL: "redis://127.0.0.1:6379",
          };
          for (const e of c.env) {
            const value = setting[e.name];
            if (value !== undefined) e.value = value;
            if (e.valueFrom !== undefined) e.valueFrom.secretKeyRef.name = secretName;
          }
          for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
            if (probe !== undefined) probe.httpGet.port = kubePorts.public;
          }
          return m;
        });
      writeFileSync(path.join(work, "play.yaml"), played.map((m) => stringify(m)).join("---\n"));
      await podman("kube", "play", "--network", "host", path.join(work, "play.yaml"));
    }, 120_000);

    afterAll(async () => {
      await podman("pod", "rm", "--force", "--time", "0", pod).catch(() => undefined);
      await podman("secret", "rm", secretName).catch(() => undefined);
      if (work !== undefined) rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("ships a Deployment with probes, two Services, a Secret example, a PodDisruptionBudget and a NetworkPolicy", () => {
      const all = manifests();
      expect(all.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual([
        "Deployment/topwagers",
        "NetworkPolicy/topwagers",
        "PodDisruptionBudget/topwagers",
        "Secret/topwagers",
        "Service/topwagers",
        "Service/topwagers-internal",
      ]);
      const deployment = all.find((m) => m.kind === "Deployment") as Manifest;
      const c = deployment.spec.template.spec.containers[0] as Container;
      expect(c.args).toEqual(["serve"]);
      expect([c.startupProbe?.httpGet.path, c.livenessProbe?.httpGet.path, c.readinessProbe?.httpGet.path]).toEqual([
        "/healthz",
        "/healthz",
        "/readyz",
      ]);
      const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? `secret:${e.valueFrom?.secretKeyRef.key}`]));
      expect(env).toMatchObject({
        METRICS_PORT: "9100",
        TRUSTED_PROXIES: "10.0.0.0/8",
        DATABASE_URL: "secret:database-url",
        INGEST_TOKEN: "secret:ingest-token",
        ADMIN_TOKEN: "secret:admin-token",
      });
      // Prometheus in from its own namespace: a namespaceSelector with a podSelector, on the metrics port only.
      const policy = all.find((m) => m.kind === "NetworkPolicy") as Manifest;
      const metrics = policy.spec.ingress?.find((rule) => rule.ports.some((p) => p.port === 9100));
      expect(metrics?.from).toEqual([
        {
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
          podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
        },
      ]);
      expect(metrics?.ports).toEqual([{ port: 9100 }]);
      expect((all.find((m) => m.kind === "PodDisruptionBudget") as Manifest).spec.maxUnavailable).toBe(1);
    });

    it("one replica reaches the local MariaDB and reports ready", async () => {
      const deadline = Date.now() + 30_000;
      let body: unknown;
      for (;;) {
        const response = await fetch(`http://127.0.0.1:${kubePorts.public}/readyz`).catch(() => undefined);
        body = response === undefined ? undefined : await response.json();
        if (response?.status === 200 || Date.now() > deadline) break;
        await sleep(200);
      }
      expect(body).toEqual({ status: "ready", schemaVersion: LATEST_SCHEMA_VERSION, ...RELEASE });
      const { stdout } = await podman("pod", "ps", "--filter", `name=^${pod}$`, "--format", "{{.Name}} {{.Status}}");
      expect(stdout.trim()).toBe(`${pod} Running`);
    }, 40_000);

    it("answers REST 200, runs as non-root on a read-only root, and serves /metrics on its own port only", async () => {
      expect(await dayOverRest(kubePorts.public)).toEqual(DAY_BOARD);
      const { stdout } = await podman(
        "inspect",
        container,
        "--format",
        "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}",
      );
      expect(stdout.trim()).toBe("10001:10001 true");
      expect((await fetch(`http://127.0.0.1:${kubePorts.metrics}/metrics`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${kubePorts.internal}/metrics`)).status).toBe(404);
    });

    it("stops cleanly: the server exits 0 with its last log lines, and the pod is removed", async () => {
      const started = Date.now();
      await podman("pod", "stop", pod);
      const { stdout } = await podman("inspect", container, "--format", "{{.State.ExitCode}}");
      stopped = { seconds: (Date.now() - started) / 1000, exitCode: stdout.trim() };
      expect(stopped.exitCode).toBe("0");
      expect(stopped.seconds).toBeLessThan(5);
      const messages = await logMessages(container);
      expect(messages.slice(-2)).toEqual(["shutting down: finishing in-flight requests", "stopped"]);
      await podman("kube", "down", path.join(work, "play.yaml")).catch(() => undefined);
      await expect(podman("pod", "exists", pod)).rejects.toThrow();
    }, 30_000);
  });

  describe("docs/operations.md's podman kube play walkthrough", () => {
    const walk = `topwagers-walk-${suffix}`;
    let work: string | undefined;

    afterAll(async () => {
      await podman("pod", "rm", "--force", "--time", "0", `${walk}-pod-0`).catch(() => undefined);
      await podman("secret", "rm", walk).catch(() => undefined);
      if (work !== undefined) rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("runs as written: the pod gets ready, serves /metrics, and kube down removes it", async () => {
      work = mkdtempSync(path.join(tmpdir(), "topwagers-walk-"));
      const walkPorts = { public: await freePort(), internal: await freePort(), metrics: await freePort() };
      // As written, with this test's image, database, names, file and free ports. The ports and names are in
      // the manifest, so the documented sed gets four more expressions that change them.
      const ours = [
        `-e 's/name: topwagers$/name: ${walk}/'`,
        `-e 's/name: topwagers, key/name: ${walk}, key/'`,
        `-e 's/value: "8080"/value: "${walkPorts.public}"/'`,
        `-e 's/value: "9090"/value: "${walkPorts.internal}"/'`,
        `-e 's/value: "9100"/value: "${walkPorts.metrics}"/'`,
      ].join(" ");
      const script = documentedKubeWalk()
        .replaceAll("localhost/topwagers:latest", tag)
        .replaceAll("mysql://topwagers:secret@127.0.0.1:3306/topwagers", database.url)
        .replaceAll("podman secret create topwagers -", `podman secret create ${walk} -`)
        .replaceAll("podman secret rm topwagers", `podman secret rm ${walk}`)
        .replaceAll("/tmp/topwagers-podman.yaml", path.join(work, "topwagers-podman.yaml"))
        .replaceAll("8080", String(walkPorts.public))
        .replaceAll("9100", String(walkPorts.metrics))
        .replace(/^sed /m, `sed ${ours} `);
      const { stdout } = await run("bash", ["-c", `set -e\n${script}`], {
        env: process.env,
        maxBuffer: 16 * 1024 * 1024,
      });
      // /readyz's answer (curl adds no newline), then the metrics port's status.
      expect(stdout).toContain(
        `{"status":"ready","schemaVersion":${LATEST_SCHEMA_VERSION},"version":"${RELEASE.version}","commit":"${RELEASE.commit}"}200\n`,
      );
      expect(stdout).toContain("Pods removed:");
      await expect(podman("pod", "exists", `${walk}-pod-0`)).rejects.toThrow();
      await expect(podman("secret", "inspect", walk)).rejects.toThrow();
    }, 120_000);
  });
  describe("docs/operations.md's upgrade block", () => {
    const upgradeName = `topwagers-upgrade-${suffix}`;
    let old: TestDatabase | undefined;
    let work: string | undefined;

    afterAll(async () => {
      await podman("rm", "--force", "--time", "0", upgradeName).catch(() => undefined);
      await old?.drop();
      if (work !== undefined) rmSync(work, { recursive: true, force: true });
    }, 60_000);

    it("runs as written on a database left at schema 8: each step's output, then the old key reads the same board", async () => {
      old = await createTestDatabase(
        "container_upgrade",
        MIGRATIONS.filter((m) => m.version <= 8),
      );
      const oldKey = await seedAsAtSchema8(old.db.write);
      work = mkdtempSync(path.join(tmpdir(), "topwagers-upgrade-"));
      const backup = path.join(work, "topwagers-before-upgrade.sql.gz");
      const upgradePorts = { public: await freePort(), internal: await freePort() };
      const databaseName = new URL(old.url).pathname.slice(1);
      // The running instance to replace: only this build's image exists here, so it stands in for the old release,
      // serving without migrating (MIGRATE_ON_START=false), as an older release would on its own schema.
      await podman(
        ...["run", "-d", "--name", upgradeName, "--network=host", "-e", `DATABASE_URL=${old.url}`],
        ...["-e", "MIGRATE_ON_START=false", "-e", `PORT=${upgradePorts.public}`],
        ...["-e", `INTERNAL_PORT=${upgradePorts.internal}`, tag],
      );
      const { setUp, commands } = documentedBlock("mariadb-dump --single-transaction");
      expect(setUp).toBe("export CONTAINERS_CONF=$PWD/containers/containers.conf");
      expect(commands.map((c) => c.command.split(/\s/, 3).join(" "))).toEqual([
        "podman run --rm",
        "mariadb-dump --single-transaction --quick",
        "podman run --rm",
        "podman stop topwagers",
        "podman run -d",
        "curl -sf --retry",
        "podman run --rm",
      ]);
      // Each step as written, with this test's image, names, backup file, database and ports; run in turn.
      const asWritten = (command: string) =>
        command
          .replaceAll("localhost/topwagers:latest", tag)
          .replace(/--name topwagers\b/, `--name ${upgradeName}`)
          .replace(
            /^podman stop topwagers && podman rm topwagers$/,
            `podman stop ${upgradeName} && podman rm ${upgradeName}`,
          )
          .replace("localhost/topwagers:previous", tag)
          .replace(
            "-u topwagers -psecret -e 'DROP DATABASE topwagers; CREATE DATABASE topwagers ",
            `-u root -e 'DROP DATABASE ${databaseName}; CREATE DATABASE ${databaseName} `,
          )
          .replace("-u topwagers -psecret topwagers", `-u root ${databaseName}`)
          .replace("topwagers-before-upgrade.sql.gz", backup)
          .replaceAll("mysql://topwagers:secret@127.0.0.1:3306/topwagers", old?.url ?? "")
          .replaceAll("8080", String(upgradePorts.public))
          .replaceAll("9090", String(upgradePorts.internal));
      const step = (index: number) =>
        exitAndOutput(`set -eo pipefail\n${setUp}\n${asWritten(commands[index]?.command ?? "false")}`);
      const newer = MIGRATIONS.filter((m) => m.version > 8);

      // migrate --status: the eight applied, the newer ones pending, exit 1.
      const status = await step(0);
      expect(status.code).toBe(1);
      const statusLines = status.stdout.trimEnd().split("\n");
      expect(statusLines.filter((l) => l.startsWith("applied")).map((l) => l.split(/\s+/, 2)[1])).toEqual([
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
      ]);
      expect(statusLines.filter((l) => l.startsWith("pending"))).toEqual(
        newer.map((m) => `pending  ${String(m.version).padStart(3)}  ${m.name}`),
      );
      expect(statusLines.at(-1)).toBe(
        `Schema is at version 8; ${newer.length} pending (apply with: topwagers migrate).`,
      );

      // The backup: the old schema's tables with their rows.
      expect((await step(1)).code).toBe(0);
      const dumped = gunzipSync(readFileSync(backup)).toString("utf8");
      expect(dumped).toContain("CREATE TABLE `wagers`");
      expect(dumped).toContain(`(1,'up-w1',1,1,10.50000000,${JAN_1_2025 + 60},10000)`);
      expect(dumped).not.toContain("CREATE TABLE `races`");

      // migrate: each newer migration as it is recorded, in order, then the version.
      const migrate = await step(2);
      expect(migrate.code).toBe(0);
      const migrateLines = migrate.stdout.trimEnd().split("\n");
      expect(migrateLines.map((l) => l.replace(/ \(\d+\.\d s\)$/, " (… s)"))).toEqual([
        ...newer.map((m) => `Applied migration ${m.version}: ${m.name} (… s)`),
        `Schema is at version ${LATEST_SCHEMA_VERSION}.`,
      ]);
      expect(migrate.stderr).toContain(`applying migration 9: api key scopes\n`);

      // The old instance stopped and removed; the new one started, ready on the latest schema.
      expect((await step(3)).code).toBe(0);
      await expect(podman("container", "exists", upgradeName)).rejects.toThrow();
      expect((await step(4)).code).toBe(0);
      const ready = await step(5);
      expect(ready.code).toBe(0);
      expect(JSON.parse(ready.stdout)).toEqual({ status: "ready", schemaVersion: LATEST_SCHEMA_VERSION, ...RELEASE });

      // verify: every rollup the old release wrote (and the backfilled weighted sums) equals the raw wagers.
      const verify = await step(6);
      expect(verify.code).toBe(0);
      expect(verify.stdout).toMatch(
        /^verify OK: 3 hourly, 2 daily, 2 half-month and 2 monthly rows all equal the totals of 3 raw wagers \(checked in \d+:\d\d\)\.\n$/,
      );

      // The key made by the old release reads the same board from the new one (migration 9 gave it every scope).
      const board = await restTop(`http://127.0.0.1:${upgradePorts.public}`, oldKey, {
        startTimestamp: JAN_1_2025,
        endTimestamp: JAN_1_2025 + 86_399,
        numUsers: 10,
      });
      expect({ status: board.status, body: board.json }).toEqual(DAY_BOARD);

      // Issue 47: the rollback block as written (the newer instance stops, the database is dropped and made again,
      // the backup loaded, the older release started on it: this image stands in for it), then the upgrade again.
      const back = documentedBlock("DROP DATABASE topwagers");
      expect(back.setUp).toBe(setUp);
      expect(back.commands.map((c) => c.command.split(/\s/, 3).join(" "))).toEqual([
        "podman stop topwagers",
        "mariadb -h 127.0.0.1",
        "gunzip -c topwagers-before-upgrade.sql.gz",
        "podman run -d",
        "curl -sf --retry",
      ]);
      // Its last line, the readiness check, is the upgrade block's, run as written above: against the stand-in,
      // which is not ready on schema 8 by design, curl would retry the 503 thirty times. Asked once it listens instead.
      for (const command of back.commands.slice(0, -1)) {
        const done = await exitAndOutput(`set -eo pipefail\n${setUp}\n${asWritten(command.command)}`);
        expect({ command: command.command, code: done.code }).toEqual({ command: command.command, code: 0 });
      }
      let readiness: { status: number; body: unknown } | undefined;
      for (const deadline = Date.now() + 30_000; readiness === undefined && Date.now() < deadline; await sleep(500)) {
        const reply = await fetch(`http://127.0.0.1:${upgradePorts.public}/readyz`).catch(() => undefined);
        if (reply !== undefined) readiness = { status: reply.status, body: await reply.json() };
      }
      // The backup's schema, 8: the stand-in (MIGRATE_ON_START=false) says what is pending, and migrates nothing.
      expect(readiness).toEqual({
        status: 503,
        body: { status: "migrations_pending", schemaVersion: 8, expected: LATEST_SCHEMA_VERSION, ...RELEASE },
      });
      const again = await step(2);
      expect({ code: again.code, last: again.stdout.trimEnd().split("\n").at(-1) }).toEqual({
        code: 0,
        last: `Schema is at version ${LATEST_SCHEMA_VERSION}.`,
      });
      // Then, as the rollback block's text says, the rest of the upgrade block: the older release stops and the
      // new one starts (asking the older one would race its next schema check: it was not ready on schema 8).
      expect((await step(3)).code).toBe(0);
      await expect(podman("container", "exists", upgradeName)).rejects.toThrow();
      expect((await step(4)).code).toBe(0);
      const readyAgain = await step(5);
      expect(readyAgain.code).toBe(0);
      expect(JSON.parse(readyAgain.stdout)).toEqual({
        status: "ready",
        schemaVersion: LATEST_SCHEMA_VERSION,
        ...RELEASE,
      });
      const boardAgain = await restTop(`http://127.0.0.1:${upgradePorts.public}`, oldKey, {
        startTimestamp: JAN_1_2025,
        endTimestamp: JAN_1_2025 + 86_399,
        numUsers: 10,
      });
      expect({ status: boardAgain.status, body: boardAgain.json }).toEqual(DAY_BOARD);
    }, 300_000);
  });
});
