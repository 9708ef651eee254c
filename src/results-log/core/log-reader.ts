/**
 * What the log publishes, read from what is stored (docs/verify.md, "The results log"): the latest checkpoint, the
 * tiles and entry bundles of its tree (nothing beyond it: a tile exists once the published tree has its hashes),
 * the verifier key, and each logged race's entry with its inclusion proof against the first checkpoint that holds
 * it. Full tiles and complete inclusions never change, so they are kept in memory (bounded); the latest
 * checkpoint is read again after CHECKPOINT_FRESH_MS.
 */
import type { LogInclusion, LogStore, ResultsLogReader, StoredCheckpoint } from "../../ports/results-log.js";
import { inclusionProof } from "./merkle.js";
import { verifierKey } from "./signed-note.js";
import { withStoredSubtrees } from "./stored-subtrees.js";
import { entryBundle, TILE_WIDTH, type TileRef, tileBytes, tileWidthAt } from "./tiles.js";

/** How long the latest checkpoint read is used before it is read again. */
export const CHECKPOINT_FRESH_MS = 250;
const MAX_CACHED_TILES = 256;
const MAX_CACHED_INCLUSIONS = 10_000;

/** A bounded map: storing one more than `max` forgets the oldest. */
class Bounded<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
}

export class LogReader implements ResultsLogReader {
  private latest: { at: number; checkpoint: Promise<StoredCheckpoint | undefined> } | undefined;
  private readonly tiles = new Bounded<Uint8Array>(MAX_CACHED_TILES);
  private readonly inclusions = new Bounded<LogInclusion>(MAX_CACHED_INCLUSIONS);

  constructor(
    private readonly store: LogStore,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The newest checkpoint (its signed note), read at most every CHECKPOINT_FRESH_MS. */
  checkpoint(): Promise<StoredCheckpoint | undefined> {
    const now = this.clock();
    if (this.latest === undefined || now - this.latest.at >= CHECKPOINT_FRESH_MS) {
      const checkpoint = this.store.latestCheckpoint();
      this.latest = { at: now, checkpoint };
      checkpoint.catch(() => {
        this.latest = undefined;
      });
    }
    return this.latest.checkpoint;
  }

  /** The verifier key of the log's note key; undefined until the log has one. */
  async verifierKey(): Promise<string | undefined> {
    const key = await this.store.publicKey();
    return key === undefined ? undefined : verifierKey(key);
  }

  /** A tile's or entry bundle's bytes; undefined when the published tree does not have it (yet). */
  async tile(tile: TileRef): Promise<Uint8Array | undefined> {
    const path = `${tile.level}/${tile.index}`;
    const full = this.tiles.get(path);
    if (full !== undefined) return tile.width === TILE_WIDTH ? full : full.slice(0, this.bytesOf(tile, full));
    const size = (await this.checkpoint())?.size ?? 0;
    const level = tile.level === "entries" ? 0 : tile.level;
    const available = tileWidthAt(level, tile.index, size);
    if (available < tile.width || available === 0) return undefined;
    const from = tile.index * TILE_WIDTH;
    const bytes =
      tile.level === "entries"
        ? entryBundle(await this.store.entries(from, from + tile.width))
        : tileBytes(await this.store.hashes(tile.level, from, from + tile.width));
    if (tile.width === TILE_WIDTH) this.tiles.set(path, bytes);
    return bytes;
  }

  /** The byte length of the first `tile.width` items of a full tile. */
  private bytesOf(tile: TileRef, full: Uint8Array): number {
    if (tile.level !== "entries") return tile.width * 32;
    let at = 0;
    for (let i = 0; i < tile.width; i++) at += 2 + (((full[at] as number) << 8) | (full[at + 1] as number));
    return at;
  }

  /** The race's entry and its inclusion proof against the first checkpoint that holds it. */
  async inclusionOf(raceId: string): Promise<LogInclusion | undefined> {
    const cached = this.inclusions.get(raceId);
    if (cached !== undefined) return cached;
    const place = await this.store.entryOf(raceId);
    if (place === undefined) return undefined;
    const checkpoint = await this.store.checkpointHolding(place.index);
    if (checkpoint === undefined) return { ...place, checkpoint: null, proof: null };
    const proof = await withStoredSubtrees(this.store.hashes, (subtree) =>
      inclusionProof(checkpoint.size, place.index, subtree),
    );
    const inclusion: LogInclusion = {
      ...place,
      checkpoint: checkpoint.note,
      proof: proof.map((hash) => Buffer.from(hash).toString("base64")),
    };
    this.inclusions.set(raceId, inclusion);
    return inclusion;
  }
}
