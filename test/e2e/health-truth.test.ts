/**
 * gRPC health tells the truth on both listeners: NOT_SERVING whenever
 * /readyz is 503 (the database behind the server stopped, or its schema
 * behind), SERVING again when it is back, asked with grpc-js on the published
 * health proto. The internal listener answers reflection (buf curl
 * --list-services needs no local schema).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type MariaDbProcess,
  mariaDbAvailable,
  type ServerProcess,
  startServerOnOwnMariaDb,
} from "../support/processes.js";
import { RELEASE } from "../support/release.js";

const run = promisify(execFile);
const available = mariaDbAvailable();
const DATABASE = "health_truth";

let mariadb: MariaDbProcess | undefined;
let server: ServerProcess | undefined;
let internalPort = 0;
let bufDir = "";
const clients: grpc.Client[] = [];

const healthProto = protoLoader.loadSync("proto-std/grpc/health/v1/health.proto", { enums: String, defaults: true });
const check = (healthProto["grpc.health.v1.Health"] as protoLoader.ServiceDefinition)
  .Check as protoLoader.MethodDefinition<object, { status: string }>;

function healthOf(port: number, service = ""): Promise<string> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  clients.push(client);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      check.path,
      check.requestSerialize,
      check.responseDeserialize,
      { service },
      (error, response) => {
        client.close();
        resolve(error === null ? (response?.status ?? "none") : `error ${error.code}`);
      },
    );
  });
}

async function both(): Promise<string[]> {
  return [
    await healthOf(server?.port ?? 0),
    await healthOf(internalPort),
    await healthOf(server?.port ?? 0, "topwagers.v1.TopWagersService"),
    await healthOf(internalPort, "topwagers.v1.ApiKeyService"),
  ];
}

async function readyz(): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server?.baseUrl}/readyz`);
  return { status: response.status, body: await response.json() };
}

async function within(ms: number, condition: () => Promise<boolean>): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  if (!available) return;
  ({ mariadb, server } = await startServerOnOwnMariaDb(DATABASE, {
    INGEST_TOKEN: "health-truth-ingest-token-0123",
    ADMIN_TOKEN: "health-truth-admin-token-0123",
  }));
  const internal = await server.waitForLog((line) => line.msg.startsWith("internal listener"));
  internalPort = Number(internal.port);
  bufDir = await mkdtemp(join(tmpdir(), "topwagers-health-truth-"));
}, 90_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await server?.stop("SIGTERM");
  await mariadb?.destroy();
  if (bufDir !== "") await rm(bufDir, { recursive: true, force: true });
});

describe.skipIf(!available)("gRPC health follows readiness on both listeners", () => {
  it("is SERVING on both while /readyz is 200", async () => {
    expect((await readyz()).status).toBe(200);
    expect(await both()).toEqual(["SERVING", "SERVING", "SERVING", "SERVING"]);
  });

  it("turns NOT_SERVING on both when the database stops, and SERVING when it is back", async () => {
    await mariadb?.stop();
    await within(5_000, async () => (await both()).every((s) => s === "NOT_SERVING"));
    expect(await readyz()).toEqual({ status: 503, body: { status: "database_unavailable", ...RELEASE } });
    await mariadb?.start();
    await within(10_000, async () => (await both()).every((s) => s === "SERVING"));
    expect((await readyz()).status).toBe(200);
  }, 40_000);

  it("turns NOT_SERVING while the schema is behind (migrations pending)", async () => {
    const connection = await mysql.createConnection(mariadb?.url(DATABASE) ?? "");
    try {
      const [rows] = await connection.query<mysql.RowDataPacket[]>(
        "SELECT version, name, applied_at FROM schema_versions ORDER BY version DESC LIMIT 1",
      );
      const latest = rows[0] as { version: number; name: string; applied_at: number };
      // The record this release reads (schema_migrations is the one releases up to 0.4.0 read).
      await connection.query("DELETE FROM schema_versions WHERE version = ?", [latest.version]);
      expect(await readyz()).toEqual({
        status: 503,
        body: { status: "migrations_pending", schemaVersion: latest.version - 1, expected: latest.version, ...RELEASE },
      });
      expect(await both()).toEqual(["NOT_SERVING", "NOT_SERVING", "NOT_SERVING", "NOT_SERVING"]);
      await connection.query("INSERT INTO schema_versions (version, name, applied_at) VALUES (?, ?, ?)", [
        latest.version,
        latest.name,
        latest.applied_at,
      ]);
      expect(await both()).toEqual(["SERVING", "SERVING", "SERVING", "SERVING"]);
    } finally {
      await connection.end();
    }
  });

  it("answers reflection on the internal listener: buf curl --list-services without a schema", async () => {
    const { stdout } = await run(
      join(process.cwd(), "node_modules/.bin/buf"),
      ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--list-services", `http://127.0.0.1:${internalPort}`],
      { cwd: bufDir, env: { ...process.env, BUF_CACHE_DIR: join(bufDir, "cache") }, timeout: 20_000 },
    );
    expect(stdout.trim().split("\n").sort()).toEqual(
      [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "topwagers.v1.ApiKeyService",
        "topwagers.v1.RaceService",
        "topwagers.v1.WagerIngestService",
        "topwagers.v1.WebhookService",
      ].sort(),
    );
  });
});
