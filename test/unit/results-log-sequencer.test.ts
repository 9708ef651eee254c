/**
 * The log's sequencer and reader over the store port in memory: each run integrates what was appended and signs
 * a checkpoint whose root is the Merkle root of every entry (computed here from the entries alone), the tile
 * hashes it stores are the roots of full tiles, tiles and bundles are served only within the published tree, and
 * each race's inclusion proof verifies against the checkpoint it names. A tree past 65,536 entries has a level-2
 * hash; two sequencers at once sign each size once.
 */
import { describe, expect, it } from "vitest";
import { parseCheckpoint } from "../../src/results-log/core/checkpoint.js";
import { LogReader } from "../../src/results-log/core/log-reader.js";
import { type Hash, leafHash, rootOf, verifyInclusion } from "../../src/results-log/core/merkle.js";
import { MAX_ENTRIES_PER_RUN, Sequencer } from "../../src/results-log/core/sequencer.js";
import { openNote, parseVerifierKey } from "../../src/results-log/core/signed-note.js";
import { bundleEntries, tileHashes } from "../../src/results-log/core/tiles.js";
import { MemoryLogStore } from "../support/results-log-model.js";

const ORIGIN = "casino.example/topwagers";
const entryOf = (i: number) => new TextEncoder().encode(`entry ${i}`);

function appendMany(store: MemoryLogStore, from: number, to: number): void {
  for (let i = from; i < to; i++) store.append(`race_${i}`, entryOf(i));
}

describe("the sequencer", () => {
  it("signs the empty tree first, then one checkpoint per run with new entries, each the tree of every entry", async () => {
    const store = new MemoryLogStore();
    const made: string[] = [];
    const sequencer = new Sequencer(store, {
      origin: ORIGIN,
      now: () => 1_800_000_000,
      onKeyMade: (v) => made.push(v),
    });
    const first = await sequencer.run();
    expect(first?.size).toBe(0);
    expect(made).toHaveLength(1);
    const key = parseVerifierKey(made[0] as string);
    expect(key?.name).toBe(ORIGIN);
    expect(await sequencer.run()).toBeUndefined();
    const leaves: Hash[] = [];
    for (const to of [1, 2, 255, 256, 257, 600, 768]) {
      appendMany(store, leaves.length, to);
      while (leaves.length < to) leaves.push(leafHash(entryOf(leaves.length)));
      const checkpoint = await sequencer.run();
      expect(checkpoint?.size).toBe(to);
      const text = openNote(checkpoint?.note ?? "", key as NonNullable<typeof key>);
      expect(parseCheckpoint(text ?? "")).toEqual({ origin: ORIGIN, size: to, root: rootOf(leaves), extensions: [] });
      expect(await sequencer.run()).toBeUndefined();
    }
    // Level 1 holds the roots of the three full level-0 tiles, nothing else.
    expect([...store.tileHashes.keys()].sort()).toEqual(["1/0", "1/1", "1/2"]);
    for (let t = 0; t < 3; t++)
      expect(store.tileHashes.get(`1/${t}`)).toEqual(rootOf(leaves.slice(t * 256, t * 256 + 256)));
    expect(store.checkpointRows.map((c) => c.size)).toEqual([0, 1, 2, 255, 256, 257, 600, 768]);
  });

  it("stores a level-2 hash once 65,536 entries are in, over two runs when more came at once", async () => {
    const store = new MemoryLogStore();
    const sequencer = new Sequencer(store, { origin: ORIGIN });
    const total = MAX_ENTRIES_PER_RUN + 300;
    appendMany(store, 0, total);
    expect((await sequencer.run())?.size).toBe(MAX_ENTRIES_PER_RUN);
    expect((await sequencer.run())?.size).toBe(total);
    const leaves = Array.from({ length: total }, (_, i) => leafHash(entryOf(i)));
    expect(store.tileHashes.get("2/0")).toEqual(rootOf(leaves.slice(0, 65_536)));
    expect(store.tileHashes.get("1/256")).toEqual(rootOf(leaves.slice(65_536, 65_792)));
    expect(store.checkpointRows[1]?.root).toEqual(rootOf(leaves));
  });

  it("signs each size once when two sequencers (two instances) run at once", async () => {
    const store = new MemoryLogStore();
    const a = new Sequencer(store, { origin: ORIGIN });
    const b = new Sequencer(store, { origin: ORIGIN });
    await Promise.all([a.run(), b.run()]);
    for (let round = 1; round <= 20; round++) {
      appendMany(store, store.entryRows.length, round * 13);
      await Promise.all([a.run(), b.run()]);
    }
    const sizes = store.checkpointRows.map((c) => c.size);
    expect(sizes).toEqual(Array.from({ length: 21 }, (_, i) => i * 13));
  });
});

describe("the reader", () => {
  it("serves tiles and bundles of the published tree only, and proofs that verify against the checkpoint named", async () => {
    const store = new MemoryLogStore();
    let clock = 0;
    const reader = new LogReader(store, () => clock);
    const sequencer = new Sequencer(store, { origin: ORIGIN });
    await sequencer.run();
    appendMany(store, 0, 300);
    expect(await reader.tile({ level: 0, index: 0, width: 1 })).toBeUndefined();
    expect((await reader.inclusionOf("race_7"))?.checkpoint).toBeNull();
    await sequencer.run();
    appendMany(store, 300, 310); // appended, not yet in a checkpoint
    expect(await reader.tile({ level: 0, index: 0, width: 1 })).toBeUndefined(); // the size read 0 ms ago
    clock += 1_000;
    const leaves = Array.from({ length: 310 }, (_, i) => leafHash(entryOf(i)));
    expect(tileHashes((await reader.tile({ level: 0, index: 0, width: 256 })) as Uint8Array)).toEqual(
      leaves.slice(0, 256),
    );
    expect(tileHashes((await reader.tile({ level: 0, index: 1, width: 44 })) as Uint8Array)).toEqual(
      leaves.slice(256, 300),
    );
    expect(await reader.tile({ level: 0, index: 1, width: 45 })).toBeUndefined();
    expect(await reader.tile({ level: 0, index: 1, width: 256 })).toBeUndefined();
    expect(tileHashes((await reader.tile({ level: 1, index: 0, width: 1 })) as Uint8Array)).toEqual([
      rootOf(leaves.slice(0, 256)),
    ]);
    expect(bundleEntries((await reader.tile({ level: "entries", index: 1, width: 44 })) as Uint8Array)).toEqual(
      Array.from({ length: 44 }, (_, i) => entryOf(256 + i)),
    );
    // A partial view of a full tile, served from the cached full tile.
    expect(bundleEntries((await reader.tile({ level: "entries", index: 0, width: 3 })) as Uint8Array)).toEqual(
      [0, 1, 2].map(entryOf),
    );
    const key = parseVerifierKey((await reader.verifierKey()) as string) as NonNullable<
      ReturnType<typeof parseVerifierKey>
    >;
    for (const index of [0, 7, 255, 256, 299]) {
      const inclusion = await reader.inclusionOf(`race_${index}`);
      expect(inclusion?.index).toBe(index);
      expect(inclusion?.entry).toBe(`entry ${index}`);
      const checkpoint = parseCheckpoint(openNote(inclusion?.checkpoint ?? "", key) ?? "");
      expect(checkpoint?.size).toBe(300);
      const proof = (inclusion?.proof ?? []).map((p) => new Uint8Array(Buffer.from(p, "base64")));
      expect(verifyInclusion(index, 300, leaves[index] as Hash, proof, checkpoint?.root as Hash)).toBe(true);
    }
    expect(await reader.inclusionOf("race_305")).toEqual({
      index: 305,
      entry: "entry 305",
      checkpoint: null,
      proof: null,
    });
    expect(await reader.inclusionOf("race_unknown")).toBeUndefined();
  });
});
