/**
 * `seed`: writes a deterministic synthetic data set (ingest/core/seed-data.ts).
 *
 * Users always go through the ingest path (UpsertUsers' validation and SQL).
 * Wagers go through RecordWagers' path for small sets ("record"), or through
 * the bulk loader for large ones ("bulk": LOAD DATA LOCAL INFILE in
 * transactional chunks with the rollups built by the database). Both produce
 * the same tables: the same users, wagers and totals (only the gaps InnoDB
 * leaves between AUTO_INCREMENT values of wagers differ). Re-running with the same options changes nothing (every wager is a
 * duplicate), and a crashed run can simply be run again.
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { amountText, SeedData, type SeedPlan } from "../ingest/core/seed-data.js";
import { MAX_BATCH, type WagerInput } from "../ingest/core/validation.js";
import { type RecordWagersResult, type UpsertUsersResult, WagerIngest } from "../ingest/core/wager-ingest.js";
import {
  isLocalInfileRefused,
  LOCAL_INFILE_FIX,
  type LoadMethod,
  loadWagerChunk,
  localInfileEnabled,
  userKeys,
  type WagerRow,
} from "../ingest/sql/bulk-load.js";
import { mariadbIngest } from "../ingest/sql/ingest-store.js";
import type { Database } from "../platform/database/database.js";
import type { UserProfile } from "../values/records.js";

export type SeedMethod = "auto" | "record" | "bulk";

/** From this many wagers on, "auto" loads in bulk. */
export const BULK_THRESHOLD = 200_000;
const CHUNK_ROWS = 250_000;

export interface SeedProgress {
  /** A new phase starts ("users", "wagers", "voids") with this much work. */
  phase(name: "users" | "wagers" | "voids", total: number): void;
  update(done: number): void;
  done(): void;
}

export interface SeedOptions {
  readonly method?: SeedMethod;
  /** Bulk path only: force multi-row INSERTs (what happens anyway when the server refuses LOAD DATA LOCAL). */
  readonly bulkLoad?: LoadMethod;
  readonly progress?: SeedProgress;
  /** Notices for the operator (e.g. the bulk path's fallback). */
  readonly notice?: (text: string) => void;
  /**
   * Void this share of the wagers, in thousandths (0–1000), after writing them: a deterministic
   * choice by seed and wager number, so the demo and benchmarks carry voids. Default 0.
   */
  readonly voidPerMille?: number;
}

export interface SeedReport {
  readonly affiliates: number;
  readonly users: number;
  readonly wagers: number;
  /** Wagers written by this run; the rest were already there. */
  readonly recorded: number;
  readonly duplicates: number;
  readonly method: "record" | `bulk (${LoadMethod})`;
  /** Wagers voided by this run (--void-per-mille). */
  readonly voided: number;
}

export async function seedDatabase(db: Database, plan: SeedPlan, options: SeedOptions = {}): Promise<SeedReport> {
  if (!/^[A-Za-z0-9_.-]{0,24}$/.test(plan.prefix)) {
    throw new RangeError("--prefix must be at most 24 letters, digits, '_', '.' or '-'");
  }
  const data = new SeedData(plan);
  const ingest = new WagerIngest(mariadbIngest(db.write));
  const progress = options.progress;

  progress?.phase("users", data.userCount);
  let batch: UserProfile[] = [];
  for (let u = 0; u < data.userCount; u++) {
    batch.push(data.user(u));
    if (batch.length === MAX_BATCH || u === data.userCount - 1) {
      expectUpserted(await ingest.upsertUsers(batch));
      batch = [];
      progress?.update(u + 1);
    }
  }
  progress?.done();

  const method = options.method ?? "auto";
  const bulk = method === "bulk" || (method === "auto" && plan.wagers >= BULK_THRESHOLD);
  progress?.phase("wagers", plan.wagers);
  let written: { recorded: number; method: SeedReport["method"] };
  if (bulk) {
    let loadMethod: LoadMethod = options.bulkLoad ?? "load-data";
    if (loadMethod === "load-data" && !(await localInfileEnabled(db.write))) {
      options.notice?.(LOCAL_INFILE_FIX);
      loadMethod = "insert";
    }
    written = await loadInBulk(db, data, loadMethod, options);
  } else {
    written = { recorded: await recordThroughIngest(ingest, data, progress), method: "record" };
  }
  progress?.done();
  const voided = await voidShare(ingest, data, options.voidPerMille ?? 0, progress);
  return {
    voided,
    affiliates: plan.affiliates,
    users: data.userCount,
    wagers: plan.wagers,
    recorded: written.recorded,
    duplicates: plan.wagers - written.recorded,
    method: written.method,
  };
}

/** Whether wager number `n` of this seed is one of the voided share (a fixed hash, no state). */
export function seedVoids(seed: number, n: number, perMille: number): boolean {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(n, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return (h >>> 0) % 1000 < perMille;
}

async function voidShare(ingest: WagerIngest, data: SeedData, perMille: number, progress?: SeedProgress) {
  if (perMille <= 0) return 0;
  progress?.phase("voids", data.plan.wagers);
  let voided = 0;
  let batch: string[] = [];
  const flush = async () => {
    const result = await ingest.voidWagers(batch);
    if (result.kind === "invalid") throw new Error("seed produced an invalid wager id");
    voided += result.voided;
    batch = [];
  };
  for (let n = 0; n < data.plan.wagers; n++) {
    if (seedVoids(data.plan.seed, n, perMille)) batch.push(data.wagerId(n));
    if (batch.length === MAX_BATCH) await flush();
    if (n % 100_000 === 0) progress?.update(n);
  }
  if (batch.length > 0) await flush();
  progress?.update(data.plan.wagers);
  progress?.done();
  return voided;
}

async function recordThroughIngest(ingest: WagerIngest, data: SeedData, progress?: SeedProgress): Promise<number> {
  let recorded = 0;
  let done = 0;
  let batch: WagerInput[] = [];
  const flush = async () => {
    const result = await ingest.recordWagers(batch);
    recorded += expectRecorded(result);
    done += batch.length;
    batch = [];
    progress?.update(done);
  };
  for (let rank = 1; rank <= data.plan.affiliates; rank++) {
    const wagers = data.wagersOf(rank);
    for (let i = 0; i < wagers.count; i++) {
      batch.push({
        id: data.wagerId(wagers.first + i),
        userId: data.userId(wagers.userIndex[i] ?? 0),
        amount: amountText(wagers.units[i] ?? 0),
        placedAt: BigInt(wagers.placedAt[i] ?? 0),
        weightBps: data.weightBps(wagers.first + i),
      });
      if (batch.length === MAX_BATCH) await flush();
    }
  }
  if (batch.length > 0) await flush();
  return recorded;
}

async function loadInBulk(
  db: Database,
  data: SeedData,
  initialMethod: LoadMethod,
  options: SeedOptions,
): Promise<{ recorded: number; method: SeedReport["method"] }> {
  const userKey = await seededUserKeys(db, data);
  const loader = new ChunkLoader(db, initialMethod, options);
  let rows: WagerRow[] = [];
  for (let rank = 1; rank <= data.plan.affiliates; rank++) {
    const wagers = data.wagersOf(rank);
    for (let i = 0; i < wagers.count; i++) {
      const key = userKey[wagers.userIndex[i] ?? 0] as UserKey;
      rows.push([
        data.wagerId(wagers.first + i),
        key.id,
        key.affiliateId,
        amountText(wagers.units[i] ?? 0),
        wagers.placedAt[i] ?? 0,
        data.weightBps(wagers.first + i),
      ]);
      if (rows.length === CHUNK_ROWS) {
        await loader.loadWhileGenerating(rows);
        rows = [];
      }
      // Let the loading chunk's stream flow while this loop generates.
      if (i % 8192 === 8191) await yieldToEventLoop();
    }
    await yieldToEventLoop();
  }
  await loader.loading;
  if (rows.length > 0) await loader.load(rows);
  return { recorded: loader.recorded, method: `bulk (${loader.method})` };
}

interface UserKey {
  readonly id: number;
  readonly affiliateId: number;
}

/** The database keys of the seeded users, by user index (the users are written first). */
async function seededUserKeys(db: Database, data: SeedData): Promise<UserKey[]> {
  const userIds = Array.from({ length: data.userCount }, (_, u) => data.userId(u));
  const keys = await userKeys(db.write, userIds);
  return userIds.map((id) => {
    const key = keys.get(id);
    if (key === undefined) throw new Error(`seeded user ${id} is missing`);
    return key;
  });
}

/**
 * Loads chunks of wager rows in order, one in flight while the next is generated, and counts what it
 * recorded. When the server refuses LOAD DATA LOCAL, it says how to allow it and goes on with INSERTs.
 */
class ChunkLoader {
  recorded = 0;
  /** The chunk being loaded; awaited before the next one starts. */
  loading: Promise<void> = Promise.resolve();
  private done = 0;

  constructor(
    private readonly db: Database,
    public method: LoadMethod,
    private readonly options: SeedOptions,
  ) {}

  /** Starts loading `rows` once the chunk before is loaded, and returns without waiting for it. */
  async loadWhileGenerating(rows: WagerRow[]): Promise<void> {
    await this.loading;
    this.loading = this.load(rows);
    // Awaited at the next chunk; until then a failure must not count as unhandled.
    this.loading.catch(() => undefined);
  }

  async load(rows: WagerRow[]): Promise<void> {
    const chunk = { rows, firstExternalId: rows[0]?.[0] ?? "", lastExternalId: rows[rows.length - 1]?.[0] ?? "" };
    let inserted: number;
    try {
      inserted = await loadWagerChunk(this.db.write, chunk, this.method);
    } catch (error) {
      if (this.method !== "load-data" || !isLocalInfileRefused(error)) throw error;
      this.options.notice?.(LOCAL_INFILE_FIX);
      this.method = "insert";
      inserted = await loadWagerChunk(this.db.write, chunk, this.method);
    }
    this.recorded += inserted;
    this.done += rows.length;
    this.options.progress?.update(this.done);
  }
}

function expectUpserted(result: UpsertUsersResult): void {
  if (result.kind !== "upserted") {
    throw new Error(`seed generated invalid users: ${JSON.stringify(result.items.slice(0, 3))}`);
  }
}

function expectRecorded(result: RecordWagersResult): number {
  switch (result.kind) {
    case "recorded":
      return result.recorded;
    case "invalid":
      throw new Error(`seed generated invalid wagers: ${JSON.stringify(result.items.slice(0, 3))}`);
    case "unknown_users":
      throw new Error(`seed wagers name unknown users: ${result.userIds.slice(0, 5).join(", ")}`);
    case "conflict":
      throw new Error(
        `wagers ${result.wagerIds.slice(0, 5).join(", ")} already exist with other content: ` +
          "this database holds a different data set with the same --prefix; use another --prefix",
      );
  }
}
