/**
 * The results log on MariaDB, through a real server (issue 46 part 2): every final result (signed or not) and every
 * race cancelled after its start is appended once, in its own freeze's or cancellation's transaction, with dense
 * indexes; a race cancelled before its start, and the series' later races it takes along, are not. The sequencer
 * signs a checkpoint that opens with the verifier key of GET /log/vkey (and GetSigningKeys), whose root is the
 * Merkle root of the entries as stored (computed here from the rows alone); tiles, entry bundles and the
 * checkpoint are served with their headers, without a key, 404 beyond the tree. GET /races/{id}, GET
 * /verify/{id}/signed and GetRace carry the entry and its inclusion proof (null until a checkpoint holds it);
 * race.finalized carries the index and entry. Sixteen freezes at once on two instances take sixteen dense indexes.
 */
import { createHash } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { RaceService } from "../../gen/topwagers/v1/races_pb.js";
import { SigningKeyService } from "../../gen/topwagers/v1/signing_pb.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { parseCheckpoint } from "../../src/results-log/core/checkpoint.js";
import { type Hash, leafHash, rootOf, verifyInclusion } from "../../src/results-log/core/merkle.js";
import { openNote, parseVerifierKey } from "../../src/results-log/core/signed-note.js";
import { bundleEntries, tileHashes } from "../../src/results-log/core/tiles.js";
import { Signer } from "../../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../../src/signing/sql/signing-keys.js";
import { bearerConnect } from "../support/calls.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey, createKey } from "../support/fixtures.js";
import { instanceRaces, ok, subscribeToRaceEvents } from "../support/races.js";
import { useTestServer } from "../support/server.js";
import { activeSigningKey } from "../support/signed-races.js";

const ISSUER = "https://casino.example";
const ORIGIN = "casino.example/topwagers";
const server = useTestServer("results_log", { ISSUER, WEBHOOK_SECRET_KEY: "5a".repeat(32) });
const DAY = 86_400;
let now = NOV_1 - 100;
let apiKey = "";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** One instance's Races on the test database, signing with the active key unless `signed` is false. */
function instance(signed = true, tickConcurrency = 1) {
  const keys = mariadbSigningKeys(server.database.db.write, new SecretBox(undefined));
  const signer = signed ? new Signer(keys, { issuer: ISSUER, refreshMs: 0 }) : undefined;
  return instanceRaces(server.database.db, {
    now: () => now,
    freeze: "primary",
    tickConcurrency,
    ...(signer === undefined ? {} : { signer }),
  });
}

/** A one-day race of `aff` on November 1st + `day`; its id. */
async function race(races: ReturnType<typeof instance>, aff: string, slug: string, day: number): Promise<string> {
  const start = NOV_1 + day * DAY;
  const created = ok(
    await races.create(await affiliateKey(server.database.db.read, aff), {
      ...{ slug, title: slug, startTimestamp: start, endTimestamp: start + DAY - 1 },
      ...{ prizes: ["100.00", "50.00"], reviewSeconds: 0 },
    }),
  );
  return created.race.id;
}

interface EntryRow {
  readonly idx: number;
  readonly raceId: string;
  readonly entry: string;
  readonly leaf: Buffer;
}

async function entryRows(): Promise<EntryRow[]> {
  const [rows] = await server.database.db.read.query<RowDataPacket[]>(
    "SELECT idx, race_public_id, entry, leaf_hash FROM log_entries ORDER BY idx",
  );
  return rows.map((row) => ({
    idx: Number(row.idx),
    raceId: String(row.race_public_id),
    entry: Buffer.from(row.entry).toString("utf8"),
    leaf: row.leaf_hash as Buffer,
  }));
}

async function raceRow(id: string): Promise<{ digest: string; frozenAt: number; sha256: string | null }> {
  const [rows] = await server.database.db.read.query<RowDataPacket[]>(
    `SELECT r.digest, r.frozen_at, s.sha256 FROM races r LEFT JOIN race_signed_results s ON s.race_id = r.id
      WHERE r.public_id = ?`,
    [id],
  );
  const row = rows[0] as RowDataPacket;
  return {
    digest: String(row.digest),
    frozenAt: Number(row.frozen_at),
    sha256: row.sha256 === null ? null : String(row.sha256),
  };
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  const db = server.database.db;
  await activeSigningKey(db);
  await addBoard(db, "log-aff", [
    ["u1", "alice", "", ["300", NOV_1 + 10]],
    ["u2", "bob", "", ["200.5", NOV_1 + 20]],
  ]);
  await addBoard(db, "log-other", [["v1", "carol", "", ["10", NOV_1 + 30]]]);
  await subscribeToRaceEvents(db.write, "ep_log", "log-aff");
  apiKey = (await createKey(db, "log-aff")).secret;
  const signed = instance();
  ids.first = await race(signed, "log-aff", "first", 0);
  ids.other = await race(signed, "log-other", "other", 0);
  ids.unsigned = await race(instance(false), "log-aff", "unsigned", 1);
  ids.cancelledLive = await race(signed, "log-aff", "cancelled-live", 2);
  ids.cancelledEarly = await race(signed, "log-aff", "cancelled-early", 5);
  now = NOV_1 + DAY; // the first two are over
  await signed.tick();
  now = NOV_1 + 2 * DAY; // the unsigned one is over: frozen without a key
  await instance(false).tick();
  now = NOV_1 + 2 * DAY + 3_600; // the cancelled-live race has started
  const aff = await affiliateKey(db.read, "log-aff");
  ok(await signed.cancel(aff, ids.cancelledLive as string));
  ok(await signed.cancel(aff, ids.cancelledEarly as string));
}, 60_000);

describe("appending", () => {
  it("logs each final result and each race cancelled after its start, once, in order, with dense indexes", async () => {
    const rows = await entryRows();
    expect(rows.map((r) => r.idx)).toEqual([0, 1, 2, 3]);
    const [first, other, unsigned] = await Promise.all([
      raceRow(ids.first ?? ""),
      raceRow(ids.other ?? ""),
      raceRow(ids.unsigned ?? ""),
    ]);
    const finalEntry = (aff: string, id: string, r: typeof first) =>
      `{"affiliateId":"${aff}","at":${r.frozenAt},"digest":"${r.digest}","kind":"final","raceId":"${id}",` +
      `"sha256":${r.sha256 === null ? "null" : `"${r.sha256}"`},"type":"topwagers.log-entry.v1"}`;
    expect(first.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(unsigned.sha256).toBeNull();
    const expected = [
      [ids.first, finalEntry("log-aff", ids.first ?? "", first)],
      [ids.other, finalEntry("log-other", ids.other ?? "", other)],
      [ids.unsigned, finalEntry("log-aff", ids.unsigned ?? "", unsigned)],
      [
        ids.cancelledLive,
        `{"affiliateId":"log-aff","at":${now},"kind":"cancelled","raceId":"${ids.cancelledLive}","type":"topwagers.log-entry.v1"}`,
      ],
    ];
    // The first two froze in one tick, in the clock's order; compare as a set, then the rest in order.
    expect(new Set(rows.slice(0, 2).map((r) => JSON.stringify([r.raceId, r.entry])))).toEqual(
      new Set(expected.slice(0, 2).map((e) => JSON.stringify(e))),
    );
    expect(rows.slice(2).map((r) => [r.raceId, r.entry])).toEqual(expected.slice(2));
    for (const row of rows) expect(row.leaf).toEqual(Buffer.from(leafHash(Buffer.from(row.entry, "utf8"))));
  });

  it("keeps the entries as they are: an update or delete of the log is refused", async () => {
    const write = server.database.db.write;
    await expect(write.query("UPDATE log_entries SET entry = 'x' WHERE idx = 0")).rejects.toThrow(/append-only/);
    await expect(write.query("DELETE FROM log_entries WHERE idx = 0")).rejects.toThrow(/append-only/);
  });
});

describe("publishing", () => {
  it("answers a result's log with no checkpoint before the sequencer runs, then with its proof", async () => {
    const before = await fetch(`${server.baseUrl}/verify/${ids.first}/signed`);
    expect(before.headers.get("cache-control")).toBe("public, max-age=1");
    const early = (await before.json()) as { log: { checkpoint: unknown; proof: unknown } };
    expect([early.log.checkpoint, early.log.proof]).toEqual([null, null]);
    expect((await server.app.resultsLog.sequencer.run())?.size).toBe(4);
    const after = await fetch(`${server.baseUrl}/verify/${ids.first}/signed`);
    expect(after.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
  });

  it("signs a checkpoint of every entry that opens with the published verifier key", async () => {
    const vkeyAnswer = await fetch(`${server.baseUrl}/log/vkey`);
    expect(vkeyAnswer.headers.get("access-control-allow-origin")).toBe("*");
    const vkey = (await vkeyAnswer.text()).trim();
    const key = parseVerifierKey(vkey);
    expect(key?.name).toBe(ORIGIN);
    const rpc = createClient(
      SigningKeyService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    expect((await rpc.getSigningKeys({})).logVerifierKey).toBe(vkey);
    const answer = await fetch(`${server.baseUrl}/log/checkpoint`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(answer.headers.get("cache-control")).toBe("public, max-age=1");
    const text = openNote(await answer.text(), key as NonNullable<typeof key>);
    const leaves = (await entryRows()).map((row) => leafHash(Buffer.from(row.entry, "utf8")));
    expect(parseCheckpoint(text ?? "")).toEqual({ origin: ORIGIN, size: 4, root: rootOf(leaves), extensions: [] });
  });

  it("serves the tree's tiles and entries with no key, and 404 beyond it", async () => {
    const rows = await entryRows();
    const tile = await fetch(`${server.baseUrl}/log/tile/0/000.p/4`);
    expect(tile.status).toBe(200);
    expect(tile.headers.get("content-type")).toBe("application/octet-stream");
    expect(tile.headers.get("cache-control")).toBe("public, max-age=60");
    expect(tile.headers.get("access-control-allow-origin")).toBe("*");
    expect(tileHashes(new Uint8Array(await tile.arrayBuffer()))).toEqual(rows.map((r) => new Uint8Array(r.leaf)));
    const bundle = await fetch(`${server.baseUrl}/log/tile/entries/000.p/3`);
    expect(bundleEntries(new Uint8Array(await bundle.arrayBuffer()))?.map((e) => Buffer.from(e).toString())).toEqual(
      rows.slice(0, 3).map((r) => r.entry),
    );
    for (const path of [
      "tile/0/000.p/5",
      "tile/0/000",
      "tile/1/000.p/1",
      "tile/0/001.p/1",
      "tile/0/0.p/1",
      "nothing",
    ]) {
      const missing = await fetch(`${server.baseUrl}/log/${path}`);
      expect([path, missing.status, missing.headers.get("cache-control")]).toEqual([path, 404, "no-store"]);
    }
    const head = await fetch(`${server.baseUrl}/log/tile/0/000.p/4`, { method: "HEAD" });
    expect([head.status, head.headers.get("content-length"), await head.text()]).toEqual([200, "128", ""]);
  });

  it("carries each logged race's entry and proof in its answers: REST, the verify file and GetRace", async () => {
    const vkey = (await (await fetch(`${server.baseUrl}/log/vkey`)).text()).trim();
    const key = parseVerifierKey(vkey) as NonNullable<ReturnType<typeof parseVerifierKey>>;
    const rows = await entryRows();
    const rpc = createClient(RaceService, bearerConnect(server.baseUrl, apiKey));
    for (const name of ["first", "unsigned", "cancelledLive"]) {
      const id = ids[name] as string;
      const rest = await fetch(`${server.baseUrl}/races/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
      const data = ((await rest.json()) as { data: { log: Inclusion; result: { signed?: { sha256: string } } } }).data;
      const row = rows.find((r) => r.raceId === id) as EntryRow;
      expect(data.log.index).toBe(row.idx);
      expect(data.log.entry).toBe(row.entry);
      if (name === "first") expect(JSON.parse(data.log.entry).sha256).toBe(data.result.signed?.sha256);
      const checkpoint = parseCheckpoint(openNote(data.log.checkpoint, key) ?? "");
      expect(checkpoint?.size).toBe(4);
      const proof = data.log.proof.map((p) => new Uint8Array(Buffer.from(p, "base64")));
      const leaf = leafHash(Buffer.from(data.log.entry, "utf8"));
      expect(verifyInclusion(row.idx, 4, leaf, proof, checkpoint?.root as Hash)).toBe(true);
      const { race: message } = await rpc.getRace({ idOrSlug: id });
      expect(message?.log?.index).toBe(BigInt(row.idx));
      expect([message?.log?.entry, message?.log?.checkpoint]).toEqual([data.log.entry, data.log.checkpoint]);
      expect(message?.log?.proof.map((p) => Buffer.from(p).toString("base64"))).toEqual(data.log.proof);
      if (name !== "cancelledLive") {
        const signed = (await (await fetch(`${server.baseUrl}/verify/${id}/signed`)).json()) as { log?: Inclusion };
        if (name === "first") expect(signed.log).toEqual(data.log);
      }
    }
    const early = await fetch(`${server.baseUrl}/races/${ids.cancelledEarly}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(((await early.json()) as { data: { log: unknown } }).data.log).toBeNull();
  });

  it("puts the index and entry in the race.finalized event", async () => {
    const [rows] = await server.database.db.read.query<RowDataPacket[]>(
      "SELECT body FROM webhook_events WHERE type = 'race.finalized' ORDER BY id",
    );
    const logs = rows.map((row) => (JSON.parse(String(row.body)) as { data: { id: string; log: unknown } }).data);
    const entries = await entryRows();
    for (const data of logs) {
      const row = entries.find((r) => r.raceId === data.id) as EntryRow;
      expect(data.log).toEqual({ index: row.idx, entry: row.entry, checkpoint: null, proof: null });
    }
    expect(logs.map((d) => d.id).sort()).toEqual([ids.first, ids.unsigned].sort());
  });
});

interface Inclusion {
  readonly index: number;
  readonly entry: string;
  readonly checkpoint: string;
  readonly proof: string[];
}

describe("sixteen freezes at once on two instances", () => {
  it("log each result once, at sixteen dense indexes after the ones before", async () => {
    const before = (await entryRows()).length;
    const a = instance(true, 8);
    const b = instance(true, 8);
    const created: string[] = [];
    for (let i = 0; i < 16; i++) created.push(await race(a, i % 2 === 0 ? "log-aff" : "log-other", `burst-${i}`, 10));
    now = NOV_1 + 11 * DAY;
    const started = performance.now();
    const counts = await Promise.all([a.tick(), b.tick()]);
    const ms = performance.now() - started;
    expect(counts[0].frozen + counts[1].frozen).toBe(16);
    const rows = (await entryRows()).slice(before);
    expect(rows.map((r) => r.idx)).toEqual(Array.from({ length: 16 }, (_, i) => before + i));
    expect(rows.map((r) => r.raceId).sort()).toEqual([...created].sort());
    for (const row of rows) expect(JSON.parse(row.entry)).toMatchObject({ kind: "final", raceId: row.raceId });
    console.log(`16 freezes on two instances (8 at once each) took ${ms.toFixed(0)} ms`);
    expect((await server.app.resultsLog.sequencer.run())?.size).toBe(before + 16);
  });
});

describe("the entries' hash", () => {
  it("is the SHA-256 of the JWS as the result answers it", async () => {
    const signed = (await (await fetch(`${server.baseUrl}/verify/${ids.first}/signed`)).json()) as {
      jws: string;
      sha256: string;
      log: Inclusion;
    };
    expect(JSON.parse(signed.log.entry).sha256).toBe(sha256(signed.jws));
  });
});
