/**
 * The private signing key is in no log line, answer, error or metric (issue 36 item 1), with every log line on:
 * the CLI makes and activates a key (LOG_LEVEL=debug), a real server process (LOG_LEVEL=debug, ACCESS_LOG=true)
 * freezes and signs a race on its clock, signs a board with the live key it makes for that, and is asked for
 * everything that touches keys; then its stderr, the CLI's output, the answers and /metrics are searched for both
 * private keys in base64url, base64 and hex. The keys are read for the search from their sealed rows with
 * WEBHOOK_SECRET_KEY, as the server opens them. The CLI lists the live key apart from the result key and rotates
 * it: the running server signs with the new one within seconds, both stay published at jwks-live.json only. Then the same with a
 * key the operator mounts (SIGNING_KEY_FILE, a PKCS#8 PEM): a second server signs a race with it, publishes it
 * beside the database's key, and says nothing of it anywhere; a file without such a key stops the start with a
 * problem that names the setting and quotes nothing of the file.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { calculateJwkThumbprint, compactVerify, decodeProtectedHeader } from "jose";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { runCli } from "../support/cli.js";
import { useTestDatabase } from "../support/database.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey, createKey } from "../support/fixtures.js";
import { until } from "../support/polling.js";
import { internalPortOf, type ServerProcess, startServerProcess } from "../support/processes.js";
import { instanceRaces, ok, raceNamed } from "../support/races.js";
import { restCall } from "../support/rest.js";

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

/** A race of secrecy-aff over the first hour of November 1st (prize 5, no review), made before it starts. */
async function hourOfNovemberFirst(slug: string, title: string) {
  const races = instanceRaces(database.db, { now: () => NOV_1 - 100 });
  const affiliate = await affiliateKey(database.db.read, "secrecy-aff");
  return ok(
    await races.create(affiliate, raceNamed(slug, title, [NOV_1, NOV_1 + 3_599], { prizes: ["5"], reviewSeconds: 0 })),
  );
}

beforeAll(async () => {
  const made = await runCli(["signing-keys", "make", "--activate"], database.url, env());
  const listed = await runCli(["signing-keys", "list", "--json"], database.url, env());
  seen.push(made.stdout, made.stderr, listed.stdout, listed.stderr);
  expect([made.code, listed.code]).toEqual([0, 0]);
  await addBoard(database.db, "secrecy-aff", [["u1", "alice", "", ["12.5", NOV_1 + 10]]]);
  boardKey = (await createKey(database.db, "secrecy-aff")).secret;
  const race = await hourOfNovemberFirst("past", "Past");
  server = await startServerProcess({ ...env(), ACCESS_LOG: "true", RACE_CLOCK_MS: "100" });
  seen.push(...(await everythingAbout(server, race.race.id)));
});

/**
 * Everything a server answers that touches keys, once it has signed the race: the signed result (first), the
 * JWK Set (second), the verify page, GetSigningKeys, /metrics, a signed board (signed with the live key, made by
 * the server for it) and the live JWK Set.
 */
async function everythingAbout(on: ServerProcess, raceId: string): Promise<string[]> {
  const signedUrl = `${on.baseUrl}/verify/${raceId}/signed`;
  await until(
    "the signed result",
    async () => (await fetch(signedUrl)).status,
    (status) => status === 200,
    15_000,
  );
  const client = createClient(SigningKeyService, createConnectTransport({ baseUrl: on.baseUrl, httpVersion: "1.1" }));
  return [
    await (await fetch(signedUrl)).text(),
    await (await fetch(`${on.baseUrl}/.well-known/jwks.json`)).text(),
    await (await fetch(`${on.baseUrl}/verify/${raceId}`)).text(),
    await (await fetch(`http://127.0.0.1:${await internalPortOf(on)}/metrics`)).text(),
    (await restCall(`${on.baseUrl}/top-affiliate-wagers-by-period`, { key: boardKey, body: SIGNED_BOARD })).text,
    await (await fetch(`${on.baseUrl}/.well-known/jwks-live.json`)).text(),
    JSON.stringify(await client.getSigningKeys({}), (_k, v) => (typeof v === "bigint" ? String(v) : v)),
    await (await fetch(`${on.baseUrl}/log/vkey`)).text(),
    await (await fetch(`${on.baseUrl}/log/checkpoint`)).text(),
  ];
}

/** A signed board of secrecy-aff's November 1st. */
const SIGNED_BOARD = { startTimestamp: NOV_1, endTimestamp: NOV_1 + 86_399, numUsers: 3, signed: true };
let boardKey = "";

/** Every log line and other output of a server process. */
function outputOf(on: ServerProcess | undefined): string[] {
  return [...(on?.logs ?? []).map((line) => JSON.stringify(line)), ...(on?.otherOutput ?? [])];
}

describe("the private signing key", () => {
  it("is sealed at rest and appears in no log line (debug), CLI output, answer or metric", async () => {
    const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT kid, private_sealed FROM signing_keys");
    expect(rows).toHaveLength(1);
    const kid = String(rows[0]?.kid);
    const d = new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")).open(`signing-key:${kid}`, rows[0]?.private_sealed);
    const raw = Buffer.from(d, "base64url");
    expect(raw).toHaveLength(32);
    // The live key the server made for the signed board, sealed under its own name.
    const [live] = await database.db.read.query<RowDataPacket[]>("SELECT kid, private_sealed FROM live_signing_keys");
    expect(live).toHaveLength(1);
    const liveKid = String(live[0]?.kid);
    const liveD = new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")).open(
      `live-signing-key:${liveKid}`,
      live[0]?.private_sealed,
    );
    const liveRaw = Buffer.from(liveD, "base64url");
    expect(liveRaw).toHaveLength(32);
    const logs = outputOf(server);
    // The debug lines of the signatures are there (LOG_LEVEL=debug took effect), with the keys' ids only.
    expect(logs.filter((line) => line.includes('"level":20')).map((line) => JSON.parse(line).kid)).toEqual([
      kid,
      liveKid,
    ]);
    expect(logs.filter((line) => line.includes("made and activated the live signing key"))).toHaveLength(1);
    const everything = [...seen, ...logs].join("\n");
    expect(everything).toContain(kid);
    expect(everything).toContain(liveKid);
    for (const form of [d, raw.toString("base64"), raw.toString("hex")]) expect(everything).not.toContain(form);
    for (const form of [liveD, liveRaw.toString("base64"), liveRaw.toString("hex")]) {
      expect(everything).not.toContain(form);
    }
    // The results log's note key, made by the server's sequencer: its verifier key logged once, its seed nowhere.
    const [log] = await database.db.read.query<RowDataPacket[]>("SELECT key_id, private_sealed FROM log_signing_keys");
    expect(log).toHaveLength(1);
    const seed = new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")).open(
      `log-signing-key:${log[0]?.key_id}`,
      log[0]?.private_sealed,
    );
    const seedRaw = Buffer.from(seed, "base64url");
    expect(seedRaw).toHaveLength(32);
    const made = logs.filter((line) => line.includes("made the results log's key"));
    expect(made.map((line) => JSON.parse(line).verifierKey)).toEqual([seen.at(-2)?.trim()]);
    for (const form of [seed, seedRaw.toString("base64"), seedRaw.toString("hex")]) {
      expect(everything).not.toContain(form);
    }
  });
});

describe("the live key on the CLI", () => {
  it("is listed apart from the result key, and rotates without a restart: the key before stays published", async () => {
    const outputs: string[] = [];
    const cli = async (args: string[]) => {
      const outcome = await runCli(args, database.url, env());
      outputs.push(outcome.stdout, outcome.stderr);
      expect([outcome.code, outcome.stderr]).toEqual([0, ""]);
      return outcome.stdout;
    };
    const [resultRows] = await database.db.read.query<RowDataPacket[]>("SELECT kid FROM signing_keys");
    const [liveRows] = await database.db.read.query<RowDataPacket[]>("SELECT kid FROM live_signing_keys");
    const [resultKid, firstLive] = [String(resultRows[0]?.kid), String(liveRows[0]?.kid)];
    const listed = () => cli(["signing-keys", "list", "--json"]).then((text) => JSON.parse(text));
    expect((await listed()).map((k: Record<string, unknown>) => [k.purpose, k.kid, k.state])).toEqual([
      ["result", resultKid, "active"],
      ["live", firstLive, "active"],
    ]);
    const made = JSON.parse(await cli(["signing-keys", "make", "--live", "--json"])) as { kid: string };
    expect(made).toEqual({ kid: made.kid, purpose: "live", state: "new" });
    expect(await cli(["signing-keys", "activate", made.kid])).toBe(
      `${made.kid} is active: running servers sign with it within a few seconds; the key before it is retired and stays published.\n`,
    );
    expect((await listed()).map((k: Record<string, unknown>) => [k.purpose, k.kid, k.state])).toEqual([
      ["result", resultKid, "active"],
      ["live", firstLive, "retired"],
      ["live", made.kid, "active"],
    ]);
    // The running server signs the next board version with the new live key within a few seconds.
    const on = server as ServerProcess;
    let day = 0;
    const signedKid = async () => {
      day += 1; // another period each time: a version not signed yet
      const body = { ...SIGNED_BOARD, endTimestamp: SIGNED_BOARD.endTimestamp - day };
      const answer = await restCall(`${on.baseUrl}/top-affiliate-wagers-by-period`, { key: boardKey, body });
      outputs.push(answer.text);
      return (answer.json as { signed: { kid: string } }).signed.kid;
    };
    expect(await until("a board signed with the new live key", signedKid, (kid) => kid === made.kid, 10_000)).toBe(
      made.kid,
    );
    const published = async () =>
      ((await (await fetch(`${on.baseUrl}/.well-known/jwks-live.json`)).json()) as { keys: { kid: string }[] }).keys;
    const keys = await until("both live keys published", published, (k) => k.length === 2, 10_000);
    expect(keys.map((k) => k.kid)).toEqual([firstLive, made.kid]);
    const results = (await (await fetch(`${on.baseUrl}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    expect(results.keys.map((k) => k.kid)).toEqual([resultKid]);
    // Nothing printed or answered holds the new live key's private half.
    const [row] = (
      await database.db.read.query<RowDataPacket[]>("SELECT private_sealed FROM live_signing_keys WHERE kid = ?", [
        made.kid,
      ])
    )[0];
    const d = new SecretBox(Buffer.from(SECRET_KEY_HEX, "hex")).open(
      `live-signing-key:${made.kid}`,
      row?.private_sealed,
    );
    const raw = Buffer.from(d, "base64url");
    const everything = [...outputs, ...outputOf(server)].join("\n");
    for (const form of [d, raw.toString("base64"), raw.toString("hex")]) expect(everything).not.toContain(form);
  }, 60_000);
});

describe("a signing key from SIGNING_KEY_FILE", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "topwagers-signing-key-"));
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const pem = privateKey.export({ format: "pem", type: "pkcs8" }).toString();
  const { x, d } = privateKey.export({ format: "jwk" });
  const file = path.join(dir, "signing-key.pem");
  let fileServer: ServerProcess | undefined;
  let answers: string[] = [];

  beforeAll(async () => {
    writeFileSync(file, pem, { mode: 0o600 });
    // The database's key stays active in the database; a server with the file signs with the file's key.
    await server?.stop();
    server = undefined;
    const race = await hourOfNovemberFirst("past-file", "Past, signed with the file's key");
    fileServer = await startServerProcess({
      ...env(),
      SIGNING_KEY_FILE: file,
      ACCESS_LOG: "true",
      RACE_CLOCK_MS: "100",
    });
    answers = await everythingAbout(fileServer, race.race.id);
  }, 60_000);

  afterAll(async () => {
    await fileServer?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("signs with the file's key under its RFC 7638 thumbprint, published beside the database's key", async () => {
    const kid = await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: x ?? "" }, "sha256");
    const signed = JSON.parse(answers[0] ?? "") as { jws: string; kid: string };
    expect(signed.kid).toBe(kid);
    expect(decodeProtectedHeader(signed.jws)).toEqual({ alg: "EdDSA", kid, typ: "race-result+jws" });
    await compactVerify(signed.jws, publicKey);
    const [rows] = await database.db.read.query<RowDataPacket[]>("SELECT kid, public_x FROM signing_keys");
    const jwks = JSON.parse(answers[1] ?? "") as { keys: { kid: string; x: string }[] };
    expect(jwks.keys.map((key) => [key.kid, key.x])).toEqual([
      ...rows.map((row) => [String(row.kid), String(row.public_x)]),
      [kid, x],
    ]);
  });

  it("is in no log line (debug), answer or metric", () => {
    const raw = Buffer.from(d ?? "", "base64url");
    expect(raw).toHaveLength(32);
    const logs = outputOf(fileServer);
    expect(logs.filter((line) => line.includes('"level":20')).length).toBeGreaterThan(0);
    const everything = [...answers, ...logs].join("\n");
    const pemBody = pem.split("\n").filter((line) => line !== "" && !line.startsWith("-----"));
    for (const form of [d ?? "", raw.toString("base64"), raw.toString("hex"), ...pemBody]) {
      expect(everything).not.toContain(form);
    }
  });

  it("a file without an Ed25519 private key stops the start (exit 2), naming SIGNING_KEY_FILE and quoting nothing of it", async () => {
    // A public key only, and an X25519 private key: each holds secret-looking text the message must not echo.
    const publicOnly = path.join(dir, "public.pem");
    writeFileSync(publicOnly, publicKey.export({ format: "pem", type: "spki" }).toString());
    const x25519 = path.join(dir, "x25519.json");
    const other = generateKeyPairSync("x25519").privateKey.export({ format: "jwk" });
    writeFileSync(x25519, JSON.stringify(other));
    for (const bad of [publicOnly, x25519]) {
      const outcome = await runCli(["migrate", "--status"], database.url, { ...env(), SIGNING_KEY_FILE: bad });
      expect(outcome.code).toBe(2); // a configuration problem
      expect(outcome.stderr).toContain(
        `SIGNING_KEY_FILE must hold an Ed25519 private key as a PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----") or a JWK ({"kty":"OKP","crv":"Ed25519","d":…,"x":…}); "${bad}" holds neither`,
      );
      expect(outcome.stderr).not.toContain(String(other.d));
      expect(outcome.stderr).not.toContain("MCowBQYDK2Vw");
    }
    const missing = await runCli(["migrate", "--status"], database.url, {
      ...env(),
      SIGNING_KEY_FILE: path.join(dir, "absent.pem"),
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`SIGNING_KEY_FILE cannot be read: "${path.join(dir, "absent.pem")}" (ENOENT)`);
  });
});
