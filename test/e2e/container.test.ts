/**
 * The container image (issue 13): `scripts/image.sh` (what `npm run image` runs) builds it with
 * podman; it then runs with --network=host against this machine's MariaDB (a throwaway database)
 * and Redis, answers REST and gRPC (@grpc/grpc-js), and stops on SIGTERM promptly with exit 0.
 * The container and the test's image tag are removed afterwards, also when a step fails.
 *
 * Needs podman and runc (CI installs them); outside CI the file is skipped when podman is missing.
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { freePort, sleep } from "../support/processes.js";

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
const JAN = 1735689600;
const AVATAR = "https://cdn.example.com/a.png";
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

function podman(...args: string[]) {
  return run("podman", args, { env, maxBuffer: 16 * 1024 * 1024 });
}

describe.skipIf(!podmanInstalled)("the container image", () => {
  let database: TestDatabase;
  let port: number;
  let key: string;
  let keyId: string;
  let built = false;

  beforeAll(async () => {
    database = await createTestDatabase("container");
    await addUsers(database.db, [
      { id: "c-u1", affiliateId: "c-aff", username: "alice", avatar: AVATAR },
      { id: "c-u2", affiliateId: "c-aff", username: "bob", avatar: AVATAR },
    ]);
    await addWagers(database.db, [
      wager("c-u1", "10.50", JAN + 60),
      wager("c-u1", "2.25", JAN + 7200),
      wager("c-u2", "5", JAN + 3600),
    ]);
    ({ secret: key, id: keyId } = await createKey(database.db, "c-aff"));
    await run("bash", ["scripts/image.sh"], {
      env: { ...env, IMAGE_TAG: tag, IMAGE_NO_COMPILE: "1" },
      maxBuffer: 64 * 1024 * 1024,
    });
    built = true;
    port = await freePort();
    const internalPort = await freePort();
    await podman(
      "run",
      "--detach",
      "--name",
      name,
      "--network=host",
      "-e",
      `DATABASE_URL=${database.url}`,
      "-e",
      `PORT=${port}`,
      "-e",
      `INTERNAL_PORT=${internalPort}`,
      "-e",
      "REDIS_URL=redis://127.0.0.1:6379",
      "-e",
      "CACHE_TTL_MS=0",
      tag,
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (ready === 200) break;
      if (Date.now() > deadline) {
        const logs = await podman("logs", name).catch(() => ({ stdout: "", stderr: "" }));
        throw new Error(`the container did not become ready:\n${logs.stdout}${logs.stderr}`);
      }
      await sleep(200);
    }
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
    expect(version.stdout).toBe(`${VERSION}\n`);
  }, 60_000);

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

  it("answers REST", async () => {
    const response = await fetch(`http://127.0.0.1:${port}/top-affiliate-wagers-by-period`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ startTimestamp: JAN, endTimestamp: JAN + 86_399, numUsers: 10 }),
    });
    expect({ status: response.status, body: await response.json() }).toEqual({
      status: 200,
      body: {
        data: [
          { username: "alice", avatar: AVATAR, totalWagered: 12.75 },
          { username: "bob", avatar: AVATAR, totalWagered: 5 },
        ],
        errors: null,
      },
    });
  });

  it("answers gRPC (@grpc/grpc-js)", async () => {
    const definition = protoLoader.loadSync("proto/topwagers/v1/top_wagers.proto", { longs: String, defaults: true });
    const method = (definition["topwagers.v1.TopWagersService"] as protoLoader.ServiceDefinition)
      .GetTopAffiliateWagersByPeriod;
    if (method === undefined) throw new Error("no GetTopAffiliateWagersByPeriod in the proto");
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${key}`);
      const response = await new Promise<unknown>((resolve, reject) => {
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          { startTimestamp: String(JAN), endTimestamp: String(JAN + 86_399), numUsers: 10 },
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
    await podman("kill", "--signal", "SIGTERM", name);
    const { stdout } = await podman("wait", name);
    const seconds = (Date.now() - started) / 1000;
    expect(stdout.trim()).toBe("0");
    expect(seconds).toBeLessThan(5);
    const logs = await podman("logs", name);
    const messages = `${logs.stdout}${logs.stderr}`
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(messages.slice(-2)).toEqual(["shutting down: finishing in-flight requests", "stopped"]);
  }, 30_000);
});
