/**
 * Servers sign by default (issue 46 part 4), with the built server and CLI as processes. Two servers started
 * together on a database with no signing key: exactly one result key is made and active, one of them logs it, both
 * publish it, a race their clocks freeze is signed with it, and a restart makes no other. A server with SIGNING=off on
 * another such database makes no key, says signing is off once, freezes a race unsigned (no signed result, a log
 * entry naming no JWS) and logs no "no signing key" warning.
 */
import { randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addBoard } from "../support/fixtures.js";
import { type ServerProcess, sleep, startServerProcess } from "../support/processes.js";

const SECRET = randomBytes(32).toString("hex");
const NOW = Math.floor(Date.now() / 1000);
const MADE = "made and activated the result signing key: none was active (docs/verify.md; SIGNING=off to sign nothing)";
const running: ServerProcess[] = [];
let signing: TestDatabase;
let off: TestDatabase;

async function server(database: TestDatabase, env: Record<string, string> = {}): Promise<ServerProcess> {
  const started = await startServerProcess({
    DATABASE_URL: database.url,
    WEBHOOK_SECRET_KEY: SECRET,
    RACE_CLOCK_MS: "200",
    ...env,
  });
  running.push(started);
  return started;
}

async function rows(database: TestDatabase, sql: string, values: unknown[] = []) {
  const [found] = await database.db.write.query<RowDataPacket[]>(sql, values);
  return found.map((r) => ({ ...r }));
}

/** A race of aff-d over a past day, made as history (review 1 s): the next tick of a server's clock freezes it. */
async function pastRace(database: TestDatabase, slug: string): Promise<string> {
  const made = await runCli(
    [
      ...["races", "create", "--affiliate", "aff-d", "--slug", slug, "--title", slug, "--allow-past"],
      ...["--start", String(NOW - 3 * 86_400), "--end", String(NOW - 2 * 86_400), "--review", "1s", "--json"],
    ],
    database.url,
    { WEBHOOK_SECRET_KEY: SECRET },
  );
  expect(made.code).toBe(0);
  return (JSON.parse(made.stdout) as { id: string }).id;
}

/** Waits until the race is frozen (its log entry is written in the freeze's transaction); the entry. */
async function frozenAndLogged(database: TestDatabase, raceId: string): Promise<Record<string, unknown>> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(200)) {
    const [entry] = await rows(database, "SELECT entry FROM log_entries WHERE race_public_id = ?", [raceId]);
    if (entry !== undefined) return JSON.parse(Buffer.from(entry.entry as Buffer).toString("utf8"));
  }
  throw new Error(`race ${raceId} was not frozen and logged in 15 s`);
}

beforeAll(async () => {
  [signing, off] = await Promise.all([createTestDatabase("signing_default"), createTestDatabase("signing_off")]);
  for (const database of [signing, off]) {
    await addBoard(database.db, "aff-d", [["d-1", "dee", "", ["7", NOW - 3 * 86_400 + 60]]]);
  }
}, 30_000);

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop().catch(() => undefined)));
  await Promise.all([signing?.drop(), off?.drop()]);
}, 60_000);

describe("servers sign by default", () => {
  it("two servers starting together make one result key for the fleet, and sign a freeze with it", async () => {
    const [a, b] = await Promise.all([server(signing), server(signing)]);
    const keys = await rows(signing, "SELECT kid, active FROM signing_keys");
    expect(keys.map((k) => Number(k.active))).toEqual([1]);
    const kid = String(keys[0]?.kid);
    const made = [a, b].flatMap((s) => s.logs.filter((l) => l.msg === MADE));
    expect(made.map((l) => [l.level, l.kid])).toEqual([[30, kid]]);
    for (const s of [a, b]) {
      const published = (await (await fetch(`${s.baseUrl}/.well-known/jwks.json`)).json()) as {
        keys: { kid: string }[];
      };
      expect(published.keys.map((k) => k.kid)).toEqual([kid]);
    }
    const raceId = await pastRace(signing, "signed-day");
    const entry = await frozenAndLogged(signing, raceId);
    const signed = (await (await fetch(`${a.baseUrl}/verify/${raceId}/signed`)).json()) as { kid: string };
    expect([signed.kid, entry.kind, typeof entry.sha256]).toEqual([kid, "final", "string"]);

    // A restart finds the key: none is made again.
    await a.stop();
    const again = await server(signing);
    expect(again.logs.some((l) => l.msg === MADE)).toBe(false);
    expect(await rows(signing, "SELECT kid FROM signing_keys")).toEqual([{ kid }]);
  }, 60_000);

  it("with SIGNING=off makes no key, freezes unsigned, and says so once instead of warning", async () => {
    const quiet = await server(off, { SIGNING: "off" });
    expect(quiet.logs.filter((l) => l.msg.startsWith("signing is off")).map((l) => [l.level, l.msg])).toEqual([
      [30, "signing is off (SIGNING=off): final results and live versions go out unsigned (docs/verify.md)"],
    ]);
    const raceId = await pastRace(off, "unsigned-day");
    const entry = await frozenAndLogged(off, raceId);
    expect([entry.kind, entry.sha256]).toEqual(["final", null]);
    expect((await fetch(`${quiet.baseUrl}/verify/${raceId}/signed`)).status).toBe(404);
    expect(await (await fetch(`${quiet.baseUrl}/.well-known/jwks.json`)).json()).toEqual({ keys: [] });
    expect(await rows(off, "SELECT kid FROM signing_keys")).toEqual([]);
    expect(quiet.logs.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([]);
  }, 60_000);
});
