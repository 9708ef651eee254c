/**
 * What the results log asks of storage, and what it gives the races' answers (docs/verify.md, "The results log").
 * Every final result and every cancellation of a race that had started is appended once, in the transaction that
 * freezes or cancels it (results-log/sql/log-append.ts); one sequencer at a time integrates what was appended
 * into the Merkle tree and signs a checkpoint (results-log/core/sequencer.ts); readers serve tiles, checkpoints and
 * inclusion proofs from what is stored (results-log/core/log-reader.ts). Implemented on MariaDB by
 * results-log/sql/log-store.ts.
 */

/** What an entry records (results-log/core/log-entry.ts gives its bytes). */
export type LoggedEvent =
  | {
      readonly kind: "final";
      /** The affiliate's platform id. */
      readonly affiliateId: string;
      readonly raceId: string;
      /** When it was frozen, Unix seconds. */
      readonly at: number;
      /** The result's digest (docs/api.md). */
      readonly digest: string;
      /** SHA-256 (lowercase hex) of the signed result's JWS; null: frozen while no key was active. */
      readonly sha256: string | null;
    }
  | {
      readonly kind: "cancelled";
      readonly affiliateId: string;
      readonly raceId: string;
      /** When it was cancelled, Unix seconds. */
      readonly at: number;
    };

/** An entry and its index, as the transaction that appended it assigned them. */
export interface LogPlace {
  readonly index: number;
  /** The entry's text exactly as logged (its bytes are this text's UTF-8). */
  readonly entry: string;
}

/**
 * A logged race's place in the log and its proof, as answers carry it: the entry, its index, the first
 * checkpoint (a signed note) whose tree holds it, and the inclusion proof against that checkpoint (standard
 * base64 hashes, the leaf's side first). `checkpoint` and `proof` are null until a checkpoint holds the entry
 * (within seconds of the freeze); from then on the answer never changes.
 */
export interface LogInclusion extends LogPlace {
  readonly checkpoint: string | null;
  readonly proof: readonly string[] | null;
}

/** The log's inclusion of a race, for the races' answers. */
export interface ResultsLogReader {
  /** The race's entry and proof; undefined when the race is not logged. */
  inclusionOf(raceId: string): Promise<LogInclusion | undefined>;
}

/** A checkpoint as stored: its tree's size and root, and the signed note. */
export interface StoredCheckpoint {
  readonly size: number;
  readonly root: Uint8Array;
  readonly note: string;
}

/** The log's note key (Ed25519): its name (the origin), public key, and private seed (RFC 8037 `d`, base64url). */
export interface LogKey {
  readonly name: string;
  readonly publicKey: Uint8Array;
  readonly privateSeed: string;
}

/** Stored hashes of one tile level (0: leaf hashes; L: roots of full level L-1 tiles), indexes [from, to). */
export type StoredHashRead = (level: number, from: number, to: number) => Promise<Uint8Array[]>;

/** One sequencer's integration, holding the log's sequencing lock (LogStore.integrate). */
export interface Integration {
  /** The size of the tree already integrated (the last checkpoint's), as the lock found it. */
  readonly treeSize: number;
  /** Whether a checkpoint of `treeSize` is stored (none before the first integration). */
  readonly signed: boolean;
  /** How many entries are appended (committed): the next entry's index. */
  readonly entryCount: number;
  /** Stored hashes, as this integration sees them (its own new hashes included). */
  readonly hashes: StoredHashRead;
  /** Stores new tile hashes (levels ≥ 1). */
  storeHashes(level: number, from: number, hashes: readonly Uint8Array[]): Promise<void>;
  /** Stores the checkpoint and moves the integrated size to it. */
  storeCheckpoint(checkpoint: StoredCheckpoint, at: number): Promise<void>;
}

export interface LogStore {
  /** How many entries are appended (committed). */
  entryCount(): Promise<number>;
  /** Since when results are logged (the log's migration), Unix seconds: what was final before is not in it. */
  beganAt(): Promise<number>;
  /** The newest checkpoint; undefined before the first. */
  latestCheckpoint(): Promise<StoredCheckpoint | undefined>;
  /** The first checkpoint whose tree holds entry `index` (size > index). */
  checkpointHolding(index: number): Promise<StoredCheckpoint | undefined>;
  /** Checkpoints of size ≥ `from`, smallest first, at most `limit`. */
  checkpoints(from: number, limit: number): Promise<StoredCheckpoint[]>;
  readonly hashes: StoredHashRead;
  /** Entries [from, to), in index order. */
  entries(from: number, to: number): Promise<Uint8Array[]>;
  /** The race's entry; undefined when it is not logged. */
  entryOf(raceId: string): Promise<LogPlace | undefined>;
  /** Runs `work` holding the sequencing lock, in one transaction; only one runs at a time, fleet-wide. */
  integrate<T>(work: (integration: Integration) => Promise<T>): Promise<T>;
  /** The log's note key with its private seed (the sequencer's); undefined until one is made. */
  key(): Promise<LogKey | undefined>;
  /** The log's note key's name and public key alone (what verifiers are given); undefined until one is made. */
  publicKey(): Promise<Pick<LogKey, "name" | "publicKey"> | undefined>;
  /** Stores `key` as the log's key unless one exists: false when one does (made meanwhile elsewhere). */
  insertKeyUnlessAny(key: LogKey, at: number): Promise<boolean>;
}

/** A race the log should hold (final, or cancelled after its start), as the database has it. */
export interface LoggableRace {
  /** Its internal key: the order the races are read in. */
  readonly key: number;
  /** The entry it should have. */
  readonly event: LoggedEvent;
}

/** The races the log should hold, by key, after `after` (exclusive), at most `limit`. */
export type LoggableRaces = (after: number, limit: number) => Promise<LoggableRace[]>;
