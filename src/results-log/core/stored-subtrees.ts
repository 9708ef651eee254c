/**
 * Complete subtrees from the hashes the log stores: only every eighth tree level is stored, the tiles' levels
 * (./tiles.ts): level 0 the leaf hashes, tile level t the roots of the 256^t-leaf subtrees. A subtree of 2^l leaves
 * is the root of 2^(l mod 8) stored hashes of tile level floor(l / 8), hashed up here (at most 128 of them, all in
 * one tile). A proof or a root is computed twice: once to learn which subtrees it reads (the shape of a proof
 * depends on the sizes only), then, once those hashes are fetched in a few range reads, for real.
 */
import type { StoredHashRead } from "../../ports/results-log.js";
import { HASH_SIZE, type Hash, nodeHash, type SubtreeReader } from "./merkle.js";
import { TILE_HEIGHT } from "./tiles.js";

/** The stored hashes a subtree is made of: tile level, first index, count. */
function storedSpan(level: number, index: number): { tileLevel: number; from: number; count: number } {
  const tileLevel = Math.floor(level / TILE_HEIGHT);
  const count = 2 ** (level - tileLevel * TILE_HEIGHT);
  return { tileLevel, from: index * count, count };
}

/** The root of a power-of-two run of hashes. */
export function foldHashes(hashes: readonly Hash[]): Hash {
  let layer = [...hashes];
  while (layer.length > 1) {
    const next: Hash[] = [];
    for (let i = 0; i + 1 < layer.length; i += 2) next.push(nodeHash(layer[i] as Hash, layer[i + 1] as Hash));
    layer = next;
  }
  const root = layer[0];
  if (root === undefined) throw new RangeError("no hashes to fold");
  return root;
}

/** Merged [from, to) ranges of stored hashes per tile level. */
function rangesOf(spans: readonly ReturnType<typeof storedSpan>[]): Map<number, [number, number][]> {
  const byLevel = new Map<number, [number, number][]>();
  for (const span of spans) {
    const list = byLevel.get(span.tileLevel) ?? [];
    list.push([span.from, span.from + span.count]);
    byLevel.set(span.tileLevel, list);
  }
  for (const [level, list] of byLevel) {
    list.sort((a, b) => a[0] - b[0]);
    const merged: [number, number][] = [];
    for (const range of list) {
      const last = merged[merged.length - 1];
      if (last !== undefined && range[0] <= last[1]) last[1] = Math.max(last[1], range[1]);
      else merged.push([range[0], range[1]]);
    }
    byLevel.set(level, merged);
  }
  return byLevel;
}

/**
 * Runs `compute` with a reader of complete subtrees backed by the stored hashes `read` gives: a dry run finds the
 * subtrees it needs, their stored hashes are read (one range read per run of adjacent ones), then it runs on them.
 */
export async function withStoredSubtrees<T>(read: StoredHashRead, compute: (subtree: SubtreeReader) => T): Promise<T> {
  const spans: ReturnType<typeof storedSpan>[] = [];
  const zero = new Uint8Array(HASH_SIZE);
  compute((level, index) => {
    spans.push(storedSpan(level, index));
    return zero;
  });
  const stored = new Map<string, Hash>();
  const reads: Promise<void>[] = [];
  for (const [tileLevel, ranges] of rangesOf(spans)) {
    for (const [from, to] of ranges) {
      reads.push(
        read(tileLevel, from, to).then((hashes) => {
          if (hashes.length !== to - from) throw new Error(`stored hashes ${tileLevel}/${from}..${to} are missing`);
          hashes.forEach((hash, i) => {
            stored.set(`${tileLevel}/${from + i}`, hash);
          });
        }),
      );
    }
  }
  await Promise.all(reads);
  return compute((level, index) => {
    const { tileLevel, from, count } = storedSpan(level, index);
    const hashes = Array.from({ length: count }, (_, i) => stored.get(`${tileLevel}/${from + i}`) as Hash);
    return foldHashes(hashes);
  });
}
