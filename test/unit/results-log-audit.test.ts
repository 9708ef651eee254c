/**
 * `topwagers log verify`'s check (results-log/core/log-audit.ts) over the store port in memory: a log of 600 entries
 * (two tiles and a bit, three checkpoints) that matches its races holds; each way a log can go wrong is found and
 * named: a race not logged, logged with another entry, logged twice, an entry for no race, a changed entry (its
 * leaf hash), a changed tile hash, a checkpoint that does not open or whose root is not the entries'.
 */
import { describe, expect, it } from "vitest";
import type { LoggableRace, LoggedEvent, StoredCheckpoint } from "../../src/ports/results-log.js";
import { auditLog } from "../../src/results-log/core/log-audit.js";
import { entryBytes } from "../../src/results-log/core/log-entry.js";
import { leafHash } from "../../src/results-log/core/merkle.js";
import { Sequencer } from "../../src/results-log/core/sequencer.js";
import { MemoryLogStore } from "../support/results-log-model.js";

const event = (i: number): LoggedEvent =>
  i % 7 === 3
    ? { kind: "cancelled", affiliateId: `aff-${i % 5}`, raceId: `race_${i}`, at: 1_800_000_000 + i }
    : {
        kind: "final",
        affiliateId: `aff-${i % 5}`,
        raceId: `race_${i}`,
        at: 1_800_000_000 + i,
        digest: (i % 16).toString(16).repeat(64),
        sha256: i % 11 === 0 ? null : (15 - (i % 16)).toString(16).repeat(64),
      };

/** A log of 600 entries in three checkpoints, and the races the database holds for it. */
async function loggedLog(): Promise<{ store: MemoryLogStore; races: LoggableRace[] }> {
  const store = new MemoryLogStore();
  const sequencer = new Sequencer(store, { origin: "casino.example/topwagers" });
  for (const [from, to] of [
    [0, 100],
    [100, 512],
    [512, 600],
  ] as const) {
    for (let i = from; i < to; i++) store.append(`race_${i}`, entryBytes(event(i)));
    await sequencer.run();
  }
  return { store, races: Array.from({ length: 600 }, (_, i) => ({ key: i + 1, event: event(i) })) };
}

const racesOf = (races: readonly LoggableRace[]) => async (after: number, limit: number) =>
  races.filter((r) => r.key > after).slice(0, limit);

describe("the log audit", () => {
  it("holds for a log that matches its races", async () => {
    const { store, races } = await loggedLog();
    const report = await auditLog(store, racesOf(races));
    expect(report).toMatchObject({
      entries: 600,
      finals: 600 - 86,
      cancellations: 86,
      checkpoints: 3,
      treeSize: 600,
      racesChecked: 600,
      racesBeforeLog: 0,
      problemCount: 0,
      problems: [],
    });
    expect(report.verifierKey).toMatch(/^casino\.example\/topwagers\+[0-9a-f]{8}\+/);
  });

  it("names a race not logged, one logged with another entry, and an entry for no race", async () => {
    const { store, races } = await loggedLog();
    const changed = races.map((r) =>
      r.key === 8 ? { ...r, event: { ...r.event, at: r.event.at + 1 } } : r.key === 9 ? { ...r, key: 9 } : r,
    );
    const extra = { key: 601, event: event(600) };
    const report = await auditLog(store, racesOf([...changed.filter((r) => r.key !== 10), extra]));
    expect(report.problems).toEqual([
      "race race_7 (final at 2027-01-15T08:00:08.000Z): entry 7 is not what the database holds",
      "race race_600 (final at 2027-01-15T08:10:00.000Z): not in the log",
      "entry 9: race race_9 is neither final nor cancelled after its start in the database",
    ]);
  });

  it("counts a race of before the log began that it does not hold, and wants no entry for it", async () => {
    const { store, races } = await loggedLog();
    store.beganAt = async () => 1_800_000_700;
    const early = { key: 700, event: event(650) };
    const report = await auditLog(store, racesOf([...races, early]));
    // The races logged anyway are checked as any; the one before the log and not in it is only counted.
    expect([report.racesBeforeLog, report.problemCount]).toEqual([1, 0]);
  });

  it("names an entry changed after its leaf hash was stored, and a race logged twice", async () => {
    const { store, races } = await loggedLog();
    const row = store.entryRows[300] as { raceId: string; entry: Uint8Array; leaf: Uint8Array };
    store.entryRows[300] = { ...row, entry: entryBytes({ ...event(300), at: 1 }) };
    const twice = store.entryRows[4] as typeof row;
    store.entryRows[5] = { raceId: twice.raceId, entry: twice.entry, leaf: leafHash(twice.entry) };
    const report = await auditLog(store, racesOf(races));
    expect(report.problems).toEqual(
      expect.arrayContaining([
        "entry 300: its stored leaf hash is not its bytes' hash",
        "race race_4: logged twice, entries 4 and 5",
        "checkpoint 600: its root is not the entries' root",
      ]),
    );
    // The checkpoint of 100 holds entry 5 too: its root is not the entries' either.
    expect(report.problems).toContain("checkpoint 100: its root is not the entries' root");
  });

  it("names a changed tile hash, a checkpoint that does not open, and one whose root is not the entries'", async () => {
    const { store, races } = await loggedLog();
    const tile = store.tileHashes.get("1/1") as Uint8Array;
    store.tileHashes.set(
      "1/1",
      tile.map((b, i) => (i === 0 ? b ^ 1 : b)),
    );
    const [first, second] = store.checkpointRows as [StoredCheckpoint, StoredCheckpoint];
    store.checkpointRows[0] = { ...first, note: first.note.replace("\n100\n", "\n101\n") };
    store.checkpointRows[1] = { ...second, root: second.root.map((b, i) => (i === 0 ? b ^ 1 : b)) };
    const report = await auditLog(store, racesOf(races));
    expect(report.problems).toEqual([
      "checkpoint 100: it does not open with the log's key",
      "checkpoint 512: its signed root is not the root stored beside it",
      "tile hash 1/1: not the root of the entries under it",
    ]);
  });
});
