/**
 * The log's sequencer: integrates the entries appended since the last checkpoint into the tree and signs the new
 * checkpoint, in one transaction holding the log's sequencing lock (LogStore.integrate), so one sequencer works at
 * a time fleet-wide and a checkpoint is never ahead of its stored hashes. Every instance runs it (jobs/results-log.ts);
 * the one that finds nothing new does nothing. Each full tile completed gets its root stored at the tile level above
 * (./tiles.ts): level 1 from 256 leaf hashes, level 2 from 256 level-1 hashes, and so on; the root of the new size
 * is computed from those (./stored-subtrees.ts). The first run signs the empty tree's checkpoint.
 *
 * The note key (Ed25519, its name the origin) is made once for the fleet the first time it is needed
 * (LogStore.insertKeyUnlessAny: the first instance's key goes in, the others read it) and never changes: a log's
 * key is its identity (docs/verify.md).
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { Integration, LogKey, LogStore, StoredCheckpoint } from "../../ports/results-log.js";
import { checkpointText } from "./checkpoint.js";
import { EMPTY_ROOT, rangeHash } from "./merkle.js";
import { signNote, verifierKey } from "./signed-note.js";
import { foldHashes, withStoredSubtrees } from "./stored-subtrees.js";
import { TILE_WIDTH } from "./tiles.js";

/** At most this many entries are integrated by one run (the next run takes the rest at once). */
export const MAX_ENTRIES_PER_RUN = 65_536;

export interface SequencerOptions {
  /** The origin a key made now is named (checkpoint.ts originOfIssuer, or LOG_ORIGIN). */
  readonly origin: string;
  /** Unix seconds. */
  readonly now?: () => number;
  /** Told when this instance made the log's key (its verifier key, never the private key). */
  readonly onKeyMade?: (verifierKey: string) => void;
}

/** What one run did: the new checkpoint, or undefined when there was nothing to integrate. */
export type SequencedCheckpoint = StoredCheckpoint & { readonly entries: number };

export class Sequencer {
  private key: { readonly key: LogKey; readonly privateKey: KeyObject } | undefined;
  /** The size of the last checkpoint this instance saw: a run with no entry beyond it takes no lock. */
  private seenSize = -1;
  /** How many entries the last run found appended. */
  private seenAppended = 0;

  constructor(
    private readonly store: LogStore,
    private readonly options: SequencerOptions,
  ) {}

  /** Integrates what was appended and signs a checkpoint; undefined when there was nothing new. */
  async run(): Promise<SequencedCheckpoint | undefined> {
    const appended = await this.store.entryCount();
    this.seenAppended = appended;
    if (appended === this.seenSize) return undefined;
    const { key, privateKey } = await this.signingKey();
    const now = this.options.now ?? (() => Math.floor(Date.now() / 1000));
    const made = await this.store.integrate(async (integration) => {
      const size = Math.min(integration.entryCount, integration.treeSize + MAX_ENTRIES_PER_RUN);
      if (size === integration.treeSize && integration.signed) return undefined;
      const root = await integrate(integration, size);
      const note = signNote(checkpointText({ origin: key.name, size, root }), key, privateKey);
      const checkpoint = { size, root, note };
      await integration.storeCheckpoint(checkpoint, now());
      return { ...checkpoint, entries: size - integration.treeSize };
    });
    this.seenSize = made?.size ?? (await this.store.latestCheckpoint())?.size ?? -1;
    return made;
  }

  /** What the last run saw: the entries appended, and the size of the newest checkpoint (0 before any). */
  progress(): { readonly appended: number; readonly signed: number } {
    return { appended: this.seenAppended, signed: Math.max(this.seenSize, 0) };
  }

  /** The log's key, made once for the fleet when there is none. */
  private async signingKey(): Promise<{ key: LogKey; privateKey: KeyObject }> {
    if (this.key !== undefined) return this.key;
    let key = await this.store.key();
    if (key === undefined) {
      const made = makeLogKey(this.options.origin);
      const now = this.options.now ?? (() => Math.floor(Date.now() / 1000));
      if (await this.store.insertKeyUnlessAny(made, now())) {
        key = made;
        this.options.onKeyMade?.(verifierKey(made));
      } else key = await this.store.key();
      if (key === undefined) throw new Error("the log's key could not be made or read");
    }
    this.key = { key, privateKey: privateKeyOf(key) };
    return this.key;
  }
}

/**
 * Stores the tile hashes the tree of `size` completes beyond the integrated one and returns its root. A level's
 * new hashes are stored before the next level reads them (the transaction sees its own writes).
 */
async function integrate(integration: Integration, size: number): Promise<Uint8Array> {
  const before = integration.treeSize;
  for (let level = 1; TILE_WIDTH ** level <= size; level++) {
    const span = TILE_WIDTH ** level;
    const from = Math.floor(before / span);
    const to = Math.floor(size / span);
    const made: Uint8Array[] = [];
    for (let index = from; index < to; index++) {
      const children = await integration.hashes(level - 1, index * TILE_WIDTH, (index + 1) * TILE_WIDTH);
      if (children.length !== TILE_WIDTH) throw new Error(`tile ${level - 1}/${index} is not full`);
      made.push(foldHashes(children));
    }
    if (made.length > 0) await integration.storeHashes(level, from, made);
  }
  if (size === 0) return EMPTY_ROOT;
  return withStoredSubtrees(integration.hashes, (subtree) => rangeHash(0, size, subtree));
}

/** A new Ed25519 note key named `name`. */
export function makeLogKey(name: string): LogKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const x = publicKey.export({ format: "jwk" }).x;
  if (jwk.d === undefined || x === undefined) throw new Error("Ed25519 key without its halves");
  return { name, publicKey: new Uint8Array(Buffer.from(x, "base64url")), privateSeed: jwk.d };
}

/** The key's private half as Node's KeyObject. */
export function privateKeyOf(key: LogKey): KeyObject {
  const x = Buffer.from(key.publicKey).toString("base64url");
  return createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d: key.privateSeed, x }, format: "jwk" });
}
