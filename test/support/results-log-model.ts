/**
 * The results log's store port in memory (plain arrays and maps), for the unit tier: appended entries with their
 * leaf hashes, the tile hashes the sequencer stores, checkpoints and the note key. `integrate` runs one at a time
 * and writes only when the work returns, as the database's transaction does.
 */

import type { Integration, LogKey, LogPlace, LogStore, StoredCheckpoint } from "../../src/ports/results-log.js";
import { leafHash } from "../../src/results-log/core/merkle.js";

export class MemoryLogStore implements LogStore {
  readonly entryRows: { raceId: string; entry: Uint8Array; leaf: Uint8Array }[] = [];
  /** Stored hashes of tile levels ≥ 1, by "level/index". */
  readonly tileHashes = new Map<string, Uint8Array>();
  readonly checkpointRows: StoredCheckpoint[] = [];
  private readonly indexOfRace = new Map<string, number>();
  private logKey: LogKey | undefined;
  private lock: Promise<unknown> = Promise.resolve();

  /** Appends an entry as a freeze's transaction does. */
  append(raceId: string, entry: Uint8Array): LogPlace {
    if (this.indexOfRace.has(raceId)) throw new Error(`race ${raceId} is logged already`);
    this.indexOfRace.set(raceId, this.entryRows.length);
    this.entryRows.push({ raceId, entry, leaf: leafHash(entry) });
    return { index: this.entryRows.length - 1, entry: new TextDecoder().decode(entry) };
  }

  async beganAt(): Promise<number> {
    return 0;
  }

  async entryCount(): Promise<number> {
    return this.entryRows.length;
  }

  async latestCheckpoint(): Promise<StoredCheckpoint | undefined> {
    return this.checkpointRows[this.checkpointRows.length - 1];
  }

  async checkpointHolding(index: number): Promise<StoredCheckpoint | undefined> {
    return this.checkpointRows.find((c) => c.size > index);
  }

  async checkpoints(from: number, limit: number): Promise<StoredCheckpoint[]> {
    return this.checkpointRows.filter((c) => c.size >= from).slice(0, limit);
  }

  readonly hashes = async (level: number, from: number, to: number): Promise<Uint8Array[]> =>
    this.read(this.tileHashes, level, from, to);

  private read(tiles: Map<string, Uint8Array>, level: number, from: number, to: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let i = from; i < to; i++) {
      const hash = level === 0 ? this.entryRows[i]?.leaf : tiles.get(`${level}/${i}`);
      if (hash === undefined) break;
      out.push(hash);
    }
    return out;
  }

  async entries(from: number, to: number): Promise<Uint8Array[]> {
    return this.entryRows.slice(from, to).map((row) => row.entry);
  }

  async entryOf(raceId: string): Promise<LogPlace | undefined> {
    const index = this.indexOfRace.get(raceId);
    if (index === undefined) return undefined;
    return { index, entry: new TextDecoder().decode(this.entryRows[index]?.entry) };
  }

  integrate<T>(work: (integration: Integration) => Promise<T>): Promise<T> {
    const run = this.lock.then(() => this.integrateNow(work));
    this.lock = run.catch(() => undefined);
    return run;
  }

  private async integrateNow<T>(work: (integration: Integration) => Promise<T>): Promise<T> {
    const staged = new Map(this.tileHashes);
    let checkpoint: StoredCheckpoint | undefined;
    const last = this.checkpointRows[this.checkpointRows.length - 1];
    const integration: Integration = {
      treeSize: last?.size ?? 0,
      signed: last !== undefined,
      entryCount: this.entryRows.length,
      hashes: async (level, from, to) => this.read(staged, level, from, to),
      storeHashes: async (level, from, hashes) => {
        hashes.forEach((hash, i) => {
          staged.set(`${level}/${from + i}`, hash);
        });
      },
      storeCheckpoint: async (made) => {
        checkpoint = made;
      },
    };
    const result = await work(integration);
    for (const [key, hash] of staged) this.tileHashes.set(key, hash);
    if (checkpoint !== undefined) {
      if (this.checkpointRows.some((c) => c.size === checkpoint?.size)) throw new Error("two checkpoints of one size");
      this.checkpointRows.push(checkpoint);
    }
    return result;
  }

  async key(): Promise<LogKey | undefined> {
    return this.logKey;
  }

  async publicKey(): Promise<Pick<LogKey, "name" | "publicKey"> | undefined> {
    return this.logKey === undefined ? undefined : { name: this.logKey.name, publicKey: this.logKey.publicKey };
  }

  async insertKeyUnlessAny(key: LogKey): Promise<boolean> {
    if (this.logKey !== undefined) return false;
    this.logKey = key;
    return true;
  }
}
