/**
 * A signing key every instance can use (issue 47, item 4), with the built server and CLI as processes. With a
 * server running under WEBHOOK_SECRET_KEY A, the CLI run with another key B refuses to make a key (the server could
 * not open it), naming both fingerprints and the server; with A it makes and activates one. A server started with B
 * on that database (a restore with the wrong secret) says so: one error line per key that does not open, naming
 * the real cause and both fingerprints; /readyz 200 (reads are served) with a `signing` field naming each key;
 * `topwagers_signing_failing{purpose,reason="key_unopenable"}` 1; a race due to be frozen waits, with one
 * `freeze_waiting` entry in its history and one warn line, never a failure in a loop. A key made with B (the CLI now
 * finds the server opens B) freezes it signed.
 */
import { createHmac, randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { addBoard } from "../support/fixtures.js";
import { internalPortOf, type ServerProcess, sleep, startServerProcess } from "../support/processes.js";
import { RELEASE } from "../support/release.js";

const KEY_A = randomBytes(32);
const KEY_B = randomBytes(32);
/** A key's fingerprint, as the service's docs define it: the first 8 bytes of HMAC-SHA256(key, the phrase), in hex. */
const fingerprint = (key: Buffer) =>
  createHmac("sha256", key).update("topwagers secret key fingerprint").digest("hex").slice(0, 16);
const NOW = Math.floor(Date.now() / 1000);
const otherKey = (sealedAs: string, has: Buffer) =>
  `the secret ${sealedAs} was sealed under another WEBHOOK_SECRET_KEY than this instance's (fingerprint ` +
  `${fingerprint(has)}; WEBHOOK_SECRET_KEY_PREVIOUS: none): set the key that sealed it (as WEBHOOK_SECRET_KEY, or in ` +
  "WEBHOOK_SECRET_KEY_PREVIOUS), or make and activate a new key with this one";

const SIGNED = "SELECT s.kid FROM race_signed_results s JOIN races r ON r.id = s.race_id WHERE r.public_id = ?";

let database: TestDatabase;
const running: ServerProcess[] = [];

async function server(key: Buffer): Promise<ServerProcess> {
  const started = await startServerProcess({
    DATABASE_URL: database.url,
    WEBHOOK_SECRET_KEY: key.toString("hex"),
    RACE_CLOCK_MS: "200",
  });
  running.push(started);
  return started;
}

const cli = (key: Buffer, ...args: string[]) => runCli(args, database.url, { WEBHOOK_SECRET_KEY: key.toString("hex") });

async function rows(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  const [found] = await database.db.write.query<RowDataPacket[]>(sql, values);
  return found.map((r) => ({ ...r }));
}

beforeAll(async () => {
  database = await createTestDatabase("signing_key_secret");
  await addBoard(database.db, "aff-s", [["s-1", "ann", "", ["5", NOW - 3 * 86_400 + 60]]]);
});

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop().catch(() => undefined)));
  await database?.drop();
}, 60_000);

describe("a signing key every instance can use", () => {
  let kid = "";

  it("the CLI refuses to make a key the running server could not open, and makes it with the server's key", async () => {
    const first = await server(KEY_A);
    // Its first heartbeat registers it (and the key it opens with) at start.
    let registered: Record<string, unknown> | undefined;
    for (const deadline = Date.now() + 10_000; registered === undefined && Date.now() < deadline; await sleep(100)) {
      [registered] = await rows("SELECT id, host, pid FROM instances WHERE role = 'serve'");
    }
    const refused = await cli(KEY_B, "signing-keys", "make", "--activate");
    expect(refused).toMatchObject({
      code: 1,
      stdout: "",
      stderr:
        `error: refused: the running servers could not open this key: it is sealed under the WEBHOOK_SECRET_KEY with ` +
        `fingerprint ${fingerprint(KEY_B)}, and instance ${registered?.id} (${RELEASE.version} on ${registered?.host}, ` +
        `pid ${registered?.pid}) opens with ${fingerprint(KEY_A)}. Run this command with the servers' ` +
        "WEBHOOK_SECRET_KEY (docs/operations.md, Rotating WEBHOOK_SECRET_KEY)\n",
    });
    // Nothing was added by the refused command: the one key is the one the server made at its start (servers sign
    // by default), sealed with its own WEBHOOK_SECRET_KEY.
    const made0 = await first.waitForLog((l) => l.msg.startsWith("made and activated the result signing key"));
    expect(await rows("SELECT kid FROM signing_keys")).toEqual([{ kid: made0.kid }]);
    const made = await cli(KEY_A, "signing-keys", "make", "--activate", "--json");
    expect(made.code).toBe(0);
    ({ kid } = JSON.parse(made.stdout) as { kid: string });
    await first.stop();
  }, 60_000);

  it("a server whose key differs says so, stays ready for reads, and a due freeze waits instead of failing", async () => {
    const made = await cli(
      KEY_B,
      ...["races", "create", "--affiliate", "aff-s", "--slug", "past", "--title", "Past", "--allow-past"],
      ...["--start", String(NOW - 3 * 86_400), "--end", String(NOW - 2 * 86_400), "--review", "1s", "--json"],
    );
    expect(made.code).toBe(0);
    const raceId = (JSON.parse(made.stdout) as { id: string }).id;
    const [logKey] = await rows("SELECT key_id FROM log_signing_keys WHERE active = 1");
    const wrong = await server(KEY_B);
    const ready = await fetch(`${wrong.baseUrl}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toEqual({
      status: 200,
      body: {
        status: "ready",
        schemaVersion: expect.any(Number),
        signing: {
          status: "key_unopenable",
          keys: [
            { purpose: "result", kid, message: otherKey(`signing-key:${kid}`, KEY_B) },
            { purpose: "log", kid: logKey?.key_id, message: otherKey(`log-signing-key:${logKey?.key_id}`, KEY_B) },
          ],
        },
        ...RELEASE,
      },
    });
    await wrong.waitForLog((l) => l.level === 50 && l.msg.startsWith("the active log key"));
    const errors = wrong.logs.filter((l) => l.level === 50).map((l) => l.msg);
    expect(errors).toEqual([
      `the active result key ${kid} cannot be opened on this instance: ${otherKey(`signing-key:${kid}`, KEY_B)}. ` +
        "Until it opens, races due to be frozen wait (their history says so); boards and races are still served",
      `the active log key ${logKey?.key_id} cannot be opened on this instance: ${otherKey(`log-signing-key:${logKey?.key_id}`, KEY_B)}. ` +
        "Until it opens, the results log signs no new checkpoint; results are still logged and served",
    ]);
    const metrics = await (await fetch(`http://127.0.0.1:${await internalPortOf(wrong)}/metrics`)).text();
    expect(metrics.split("\n").filter((l) => l.startsWith("topwagers_signing_failing{") && l.endsWith(" 1"))).toEqual([
      'topwagers_signing_failing{purpose="result",reason="key_unopenable"} 1',
      'topwagers_signing_failing{purpose="log",reason="key_unopenable"} 1',
    ]);

    await sleep(2_000); // ten ticks of the race clock
    expect(await rows("SELECT frozen_at FROM races WHERE public_id = ?", [raceId])).toEqual([{ frozen_at: null }]);
    const notes = await rows(
      "SELECT kind, actor_kind, detail FROM race_history WHERE race_public_id = ? AND kind = 'freeze_waiting'",
      [raceId],
    );
    expect(notes.map((n) => ({ ...n, detail: JSON.parse(String(n.detail)) }))).toEqual([
      {
        kind: "freeze_waiting",
        actor_kind: "clock",
        detail: {
          fields: [
            {
              field: "signingKey",
              after: `signing-key:${kid} cannot be opened: it was sealed under another WEBHOOK_SECRET_KEY than the instance's`,
            },
          ],
        },
      },
    ]);
    const clock = wrong.logs.filter((l) => l.level === 40 && String(l.msg).startsWith(`race ${raceId}:`));
    expect(clock.map((l) => l.msg)).toEqual([
      `race ${raceId}: its freeze waits for a signing key this instance can open: ${otherKey(`signing-key:${kid}`, KEY_B)}`,
    ]);

    // A key the server opens: the CLI with the server's key makes it; the race, tried again, is frozen signed.
    const fresh = await cli(KEY_B, "signing-keys", "make", "--activate", "--json");
    expect(fresh.code).toBe(0);
    await database.db.write.query("UPDATE races SET next_step_at = 0 WHERE public_id = ?", [raceId]);
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
      if ((await rows(SIGNED, [raceId])).length > 0) break;
    }
    expect(await rows(SIGNED, [raceId])).toEqual([{ kid: (JSON.parse(fresh.stdout) as { kid: string }).kid }]);
  }, 60_000);
});
