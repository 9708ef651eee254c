/**
 * Managed MySQL: TLS to the database with server verification, and a
 * least-privilege runtime. A MariaDB started with a certificate made here by
 * openssl (CA + server certificate for IP 127.0.0.1); a runtime user with only
 * SELECT, INSERT, UPDATE, DELETE, CREATE TEMPORARY TABLES (ingest stages a
 * batch in a session temporary table) and REQUIRE SSL; an admin user for
 * `migrate`. With MIGRATE_ON_START=false the server starts on an empty schema
 * (readyz: migrations_pending), `npm run cli -- migrate` brings it up to date,
 * then keys, ingest and the leaderboard work as the runtime user. A wrong CA
 * and a missing CA fail clearly.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from "../../src/schema/schema-migrations.js";
import { runCli } from "../support/cli.js";
import {
  defineNode,
  giveToMysql,
  installDataDir,
  makeRoot,
  type NodeProcess,
  removeRoot,
} from "../support/mariadb-topology.js";
import { ingestClientOn, internalPortOf, type ServerProcess, startServerProcess } from "../support/processes.js";
import { RELEASE } from "../support/release.js";

const openssl = promisify(execFile);
const TOKEN = "tls-ingest-token-0123456789abcdef";
const DB = "tw_tls";

let root = "";
let node: NodeProcess;
let caPath = "";
let wrongCaPath = "";
let server: ServerProcess | undefined;

async function makeCertificates(dir: string): Promise<void> {
  const at = (name: string) => path.join(dir, name);
  const sh = (args: string[]) => openssl("openssl", args, { cwd: dir });
  for (const ca of ["ca", "wrong-ca"]) {
    await sh(
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=topwagers test ${ca}`].concat([
        "-keyout",
        at(`${ca}.key`),
        "-out",
        at(`${ca}.pem`),
      ]),
    );
  }
  await sh(
    ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", at("server.key")].concat([
      "-out",
      at("server.csr"),
    ]),
  );
  writeFileSync(at("san.ext"), "subjectAltName=IP:127.0.0.1\n");
  await sh(
    ["x509", "-req", "-in", at("server.csr"), "-CA", at("ca.pem"), "-CAkey", at("ca.key")].concat([
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      at("san.ext"),
      "-out",
      at("server.pem"),
    ]),
  );
}

async function ready(base: string): Promise<[number, unknown]> {
  const response = await fetch(`${base}/readyz`);
  return [response.status, await response.json()];
}

/** Readiness once it says ready, or its last answer after `timeoutMs` (the keys load within a change-feed poll). */
async function readySoon(base: string, timeoutMs = 3_000): Promise<[number, unknown]> {
  const deadline = Date.now() + timeoutMs;
  let answer = await ready(base);
  while (answer[0] !== 200 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    answer = await ready(base);
  }
  return answer;
}

beforeAll(async () => {
  root = makeRoot("tls");
  const certs = path.join(root, "certs");
  const dataDir = path.join(root, "data");
  await openssl("mkdir", ["-p", certs]);
  await makeCertificates(certs);
  caPath = path.join(certs, "ca.pem");
  wrongCaPath = path.join(certs, "wrong-ca.pem");
  await installDataDir(dataDir);
  await giveToMysql(root);
  node = await defineNode("tls", dataDir, [
    "--skip-log-bin",
    `--ssl-ca=${caPath}`,
    `--ssl-cert=${path.join(certs, "server.pem")}`,
    `--ssl-key=${path.join(certs, "server.key")}`,
  ]);
  await node.start();
  const admin = await node.admin();
  await admin.query(
    `DROP USER IF EXISTS ''@'localhost'; DROP USER IF EXISTS ''@'${hostname()}';
     CREATE DATABASE ${DB} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
     CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app-secret' REQUIRE SSL;
     GRANT SELECT, INSERT, UPDATE, DELETE, CREATE TEMPORARY TABLES ON ${DB}.* TO 'app'@'127.0.0.1';
     CREATE USER 'dba'@'127.0.0.1' IDENTIFIED BY 'dba-secret' REQUIRE SSL;
     GRANT ALL ON ${DB}.* TO 'dba'@'127.0.0.1';`,
  );
  await admin.end();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await node?.stop();
  if (root !== "") removeRoot(root);
}, 30_000);

const appUrl = () => `mysql://app:app-secret@127.0.0.1:${node.port}/${DB}`;
const dbaUrl = () => `mysql://dba:dba-secret@127.0.0.1:${node.port}/${DB}`;

describe("TLS to the database and a DML-only runtime user", () => {
  it("a runtime user starts on an empty schema with MIGRATE_ON_START=false: readyz says migrations_pending", async () => {
    server = await startServerProcess({
      DATABASE_URL: appUrl(),
      DATABASE_TLS_CA: caPath,
      MIGRATE_ON_START: "false",
      INGEST_TOKEN: TOKEN,
    });
    expect(await ready(server.baseUrl)).toEqual([
      503,
      { status: "migrations_pending", schemaVersion: 0, expected: LATEST_SCHEMA_VERSION, ...RELEASE },
    ]);
  });

  it("migrate runs with the admin URL over TLS; the server is ready without a restart", async () => {
    const result = await runCli(["migrate", "--json"], dbaUrl(), { DATABASE_TLS_CA: caPath });
    // The JSON answer on stdout; a line on stderr as each migration starts (for a person watching a long one).
    const starts = MIGRATIONS.map((m) => `applying migration ${m.version}: ${m.name}\n`).join("");
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: starts });
    expect(JSON.parse(result.stdout)).toMatchObject({ database: DB, schemaVersion: LATEST_SCHEMA_VERSION });
    expect(await readySoon(server?.baseUrl ?? "")).toEqual([
      200,
      { status: "ready", schemaVersion: LATEST_SCHEMA_VERSION, ...RELEASE },
    ]);
  });

  it("keys, ingest and the leaderboard work as the runtime user over TLS (REQUIRE SSL)", async () => {
    const base = server?.baseUrl ?? "";
    const created = await runCli(["keys", "create", "--affiliate", "aff-tls", "--json"], appUrl(), {
      DATABASE_TLS_CA: caPath,
      MIGRATE_ON_START: "false",
    });
    // No user of aff-tls is known yet: the CLI says so (reading users as the runtime user), and creates the key.
    expect({ code: created.code, stderr: created.stderr }).toEqual({
      code: 0,
      stderr:
        "warning: no users of affiliate aff-tls are known yet, so the key reads an empty leaderboard until the " +
        "platform sends some (check the affiliate id for a typo).\n",
    });
    const key = String((JSON.parse(created.stdout) as { key: string }).key);
    const ingest = ingestClientOn(await internalPortOf(server as ServerProcess), TOKEN);
    await ingest.upsertUsers({
      users: [
        { id: "u-1", affiliateId: "aff-tls", username: "alice", avatar: "" },
        { id: "u-2", affiliateId: "aff-tls", username: "bob", avatar: "" },
      ],
    });
    const recorded = await ingest.recordWagers({
      wagers: [
        { id: "w-1", userId: "u-1", amount: "10.10", placedAt: 1735689600n },
        { id: "w-2", userId: "u-1", amount: "0.20", placedAt: 1735689700n },
        { id: "w-3", userId: "u-2", amount: "7.5", placedAt: 1735689800n },
      ],
    });
    expect([recorded.recorded, recorded.duplicates]).toEqual([3, 0]);
    const response = await fetch(`${base}/top-affiliate-wagers-by-period`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ startTimestamp: 1735689600, endTimestamp: 1738367999, numUsers: 10 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { data: { username: string; totalWagered: number }[] };
    expect(body.data.map((e) => [e.username, e.totalWagered])).toEqual([
      ["alice", 10.3],
      ["bob", 7.5],
    ]);
    // REQUIRE SSL: the database refused any session of this user without TLS (see the last test).
  });

  it("the runtime user has no DDL right: what MIGRATE_ON_START=false relies on", async () => {
    const result = await runCli(["migrate"], appUrl(), { DATABASE_TLS_CA: caPath });
    expect(result.code).toBe(1);
    // Its first DDL, CREATE DATABASE IF NOT EXISTS, is refused.
    expect(result.stderr).toBe("error: Access denied for user 'app'@'127.0.0.1' to database 'tw_tls'\n");
  });

  it("a wrong CA fails clearly, and so does no CA for a REQUIRE SSL user", async () => {
    const wrong = await runCli(["migrate", "--status"], dbaUrl(), { DATABASE_TLS_CA: wrongCaPath });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /self[- ]signed certificate|unable to verify the first certificate|unable to get local issuer/,
    );
    const plain = await runCli(["migrate", "--status"], dbaUrl());
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(
      /^error: Access denied for user 'dba'@'(127\.0\.0\.1|localhost)' \(using password: YES\)\n$/,
    );
  });
});
