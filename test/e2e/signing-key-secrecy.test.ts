/**
 * The private signing key is in no log line, answer, error or metric (issue 36 item 1), with every log line on:
 * the CLI makes and activates a key (LOG_LEVEL=debug), a real server process (LOG_LEVEL=debug, ACCESS_LOG=true)
 * freezes and signs a race on its clock, and is asked for everything that touches keys; then its stderr, the
 * CLI's output, the answers and /metrics are searched for the private key in base64url, base64 and hex. The key
 * is read for the search from its sealed row with WEBHOOK_SECRET_KEY, as the server opens it.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { WebhookSecretBox } from "../../src/storage/webhook-secrets.js";
import { runCli } from "../support/cli.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey } from "../support/fixtures.js";
import { until } from "../support/polling.js";
import { internalPortOf, type ServerProcess, startServerProcess } from "../support/processes.js";
import { instanceRaces, ok } from "../support/races.js";

const SECRET_KEY_HEX = "5a".repeat(32);
const database = useTestDatabase("signing_secrecy");
const env = () => ({
  DATABASE_URL: database.url,
  WEBHOOK_SECRET_KEY: SECRET_KEY_HEX,
  ISSUER: "https://casino.example",
  LOG_LEVEL: "debug",
});
let server: ServerProcess | undefined;
const seen: string[] = [];

afterAll(async () => {
  await server?.stop();
});

beforeAll(async () => {
  const made = await runCli(["signing-keys", "make", "--activate"], database.url, env());
  const listed = await runCli(["signing-keys", "list", "--json"], database.url, env());
  seen.push(made.stdout, made.stderr, listed.stdout, listed.stderr);
  expect([made.code, listed.code]).toEqual([0, 0]);
  await addBoard(database.db, "secrecy-aff", [["u1", "alice", "", ["12.5", NOV_1 + 10]]]);
  const races = instanceRaces(database.db, { now: () => NOV_1 - 100 });
  const affiliate = await affiliateKey(database.db.read, "secrecy-aff");
  const race = ok(
    await races.create(affiliate, {
      slug: "past",
      title: "Past",
      startTimestamp: NOV_1,
      endTimestamp: NOV_1 + 3_599,
      prizes: ["5"],
      reviewSeconds: 0,
    }),
  );
  server = await startServerProcess({ ...env(), ACCESS_LOG: "true", RACE_CLOCK_MS: "100" });
  const signedUrl = `${server.baseUrl}/verify/${race.race.id}/signed`;
  await until(
    "the signed result",
    async () => (await fetch(signedUrl)).status,
    (status) => status === 200,
    15_000,
  );
  seen.push(await (await fetch(signedUrl)).text());
  seen.push(await (await fetch(`${server.baseUrl}/.well-known/jwks.json`)).text());
  seen.push(await (await fetch(`${server.baseUrl}/verify/${race.race.id}`)).text());
  const client = createClient(
    SigningKeyService,
    createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
  );
  seen.push(JSON.stringify(await client.getSigningKeys({}), (_k, v) => (typeof v === "bigint" ? String(v) : v)));
  seen.push(await (await fetch(`http://127.0.0.1:${await internalPortOf(server)}/metrics`)).text());
});

describe("the private signing key", () => {
  it("is sealed at rest and appears in no log line (debug), CLI output, answer or metric", async () => {
    const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT kid, private_sealed FROM signing_keys");
    expect(rows).toHaveLength(1);
    const kid = String(rows[0]?.kid);
    const d = new WebhookSecretBox(Buffer.from(SECRET_KEY_HEX, "hex")).open(
      `signing-key:${kid}`,
      rows[0]?.private_sealed,
    );
    const raw = Buffer.from(d, "base64url");
    expect(raw).toHaveLength(32);
    const logs = [...(server?.logs ?? []).map((line) => JSON.stringify(line)), ...(server?.otherOutput ?? [])];
    // The debug line of the signature is there (LOG_LEVEL=debug took effect), with the key's id only.
    expect(logs.filter((line) => line.includes('"level":20')).map((line) => JSON.parse(line).kid)).toEqual([kid]);
    const everything = [...seen, ...logs].join("\n");
    expect(everything).toContain(kid);
    for (const form of [d, raw.toString("base64"), raw.toString("hex")]) expect(everything).not.toContain(form);
  });
});
