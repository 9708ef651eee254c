/**
 * `topwagers log verify`: the whole log read once and checked against itself and against the races
 * (docs/verify.md, "Checking the whole log"). Every entry is at its index with no gap, its stored leaf hash is the
 * hash of its bytes and it is a canonical log entry; each race is logged once; every stored tile hash is the root of
 * the entries under it; every checkpoint opens with the log's key, names its origin, and its root is the root of the
 * first `size` entries (so every checkpoint is consistent with every other: they are prefixes of one list); and every
 * race final, or cancelled after its start, since the log began is logged with exactly the entry the database
 * gives, and nothing else is. Entries are read in batches, the tree's right edge kept as they go (./frontier.ts).
 */
import { createHash } from "node:crypto";
import type { LoggableRaces, LogStore, StoredCheckpoint } from "../../ports/results-log.js";
import { parseCheckpoint } from "./checkpoint.js";
import { MerkleFrontier } from "./frontier.js";
import { entryText, parseEntry } from "./log-entry.js";
import { type Hash, leafHash, sameHash } from "./merkle.js";
import { openNote, verifierKey } from "./signed-note.js";
import { TILE_HEIGHT, TILE_WIDTH } from "./tiles.js";

const BATCH = 4_096;

export interface LogAuditOptions {
  /** At most this many problems are listed (all are counted). */
  readonly maxReported?: number;
  /** Told as entries are read: how many so far, of how many. */
  readonly onProgress?: (read: number, total: number) => void;
}

export interface LogAuditReport {
  readonly entries: number;
  readonly finals: number;
  readonly cancellations: number;
  readonly checkpoints: number;
  /** The latest checkpoint's tree size; 0 before the first. */
  readonly treeSize: number;
  /** Its root hash (base64); null before the first checkpoint. */
  readonly root: string | null;
  readonly verifierKey: string | null;
  /** Races read from the database: final or cancelled after their start. */
  readonly racesChecked: number;
  /** Of those, final or cancelled before the log began (not expected in it). */
  readonly racesBeforeLog: number;
  readonly problemCount: number;
  readonly problems: readonly string[];
}

/** The problems found so far: counted, the first `max` kept. */
class Problems {
  count = 0;
  readonly listed: string[] = [];
  constructor(private readonly max: number) {}
  add(problem: string): void {
    this.count += 1;
    if (this.listed.length < this.max) this.listed.push(problem);
  }
}

/** What reading the entries found: the races logged (their index and entry's hash), and the counts. */
interface EntriesRead {
  readonly logged: Map<string, { index: number; sha: string }>;
  readonly finals: number;
  readonly cancellations: number;
}

export async function auditLog(
  store: LogStore,
  races: LoggableRaces,
  options: LogAuditOptions = {},
): Promise<LogAuditReport> {
  const problems = new Problems(options.maxReported ?? 100);
  const [key, head, beganAt] = await Promise.all([store.publicKey(), store.entryCount(), store.beganAt()]);
  const checkpoints = await checkedCheckpoints(store, key, head, problems);
  const latest = checkpoints.at(-1);
  const computedTiles = new Map<string, Hash>();
  const frontier = new MerkleFrontier((level, index, hash) => {
    if (level > 0 && level % TILE_HEIGHT === 0) computedTiles.set(`${level / TILE_HEIGHT}/${index}`, hash);
  });
  const read = await readEntries(store, head, frontier, checkpoints, problems, options.onProgress);
  await compareTileHashes(store, latest?.size ?? 0, computedTiles, problems);
  const { checked, beforeLog } = await compareWithRaces(races, beganAt, read.logged, problems);
  return {
    entries: head,
    finals: read.finals,
    cancellations: read.cancellations,
    checkpoints: checkpoints.length,
    treeSize: latest?.size ?? 0,
    root: latest === undefined ? null : Buffer.from(latest.root).toString("base64"),
    verifierKey: key === undefined ? null : verifierKey(key),
    racesChecked: checked,
    racesBeforeLog: beforeLog,
    problemCount: problems.count,
    problems: problems.listed,
  };
}

/** Every stored checkpoint, each opened with the log's key and read; the ones that do not open are problems. */
async function checkedCheckpoints(
  store: LogStore,
  key: Awaited<ReturnType<LogStore["publicKey"]>>,
  head: number,
  problems: Problems,
): Promise<StoredCheckpoint[]> {
  const good: StoredCheckpoint[] = [];
  for (let from = 0; ; ) {
    const page = await store.checkpoints(from, 1_000);
    for (const stored of page) {
      const text = key === undefined ? undefined : openNote(stored.note, key);
      const checkpoint = text === undefined ? undefined : parseCheckpoint(text);
      if (checkpoint === undefined) problems.add(`checkpoint ${stored.size}: it does not open with the log's key`);
      else if (checkpoint.origin !== key?.name || checkpoint.size !== stored.size) {
        problems.add(`checkpoint ${stored.size}: it names ${checkpoint.origin} at size ${checkpoint.size}`);
      } else if (!sameHash(checkpoint.root, stored.root)) {
        problems.add(`checkpoint ${stored.size}: its signed root is not the root stored beside it`);
      } else if (stored.size > head) {
        problems.add(`checkpoint ${stored.size}: the log holds only ${head} entries`);
      } else good.push({ ...stored, root: checkpoint.root });
    }
    if (page.length < 1_000) return good;
    from = (page.at(-1)?.size ?? from) + 1;
  }
}

/** Reads every entry in order: its index, leaf hash and form, each race once, and every checkpoint's root. */
async function readEntries(
  store: LogStore,
  head: number,
  frontier: MerkleFrontier,
  checkpoints: readonly StoredCheckpoint[],
  problems: Problems,
  onProgress: LogAuditOptions["onProgress"],
): Promise<EntriesRead> {
  const logged = new Map<string, { index: number; sha: string }>();
  const counts = { finals: 0, cancellations: 0 };
  let nextCheckpoint = 0;
  const checkRoots = () => {
    for (let c = checkpoints[nextCheckpoint]; c !== undefined && c.size === frontier.size; ) {
      if (!sameHash(frontier.root(), c.root)) problems.add(`checkpoint ${c.size}: its root is not the entries' root`);
      c = checkpoints[++nextCheckpoint];
    }
  };
  checkRoots();
  for (let from = 0; from < head; from += BATCH) {
    const to = Math.min(head, from + BATCH);
    const [entries, leaves] = await Promise.all([store.entries(from, to), store.hashes(0, from, to)]);
    if (entries.length !== to - from || leaves.length !== to - from) {
      problems.add(`entries ${from + Math.min(entries.length, leaves.length)}..${to - 1}: missing`);
      return { logged, ...counts };
    }
    entries.forEach((entry, i) => {
      checkEntry(from + i, entry, leaves[i] as Hash, logged, counts, problems);
      frontier.push(leafHash(entry));
      checkRoots();
    });
    onProgress?.(to, head);
  }
  return { logged, ...counts };
}

function checkEntry(
  index: number,
  entry: Uint8Array,
  stored: Hash,
  logged: EntriesRead["logged"],
  counts: { finals: number; cancellations: number },
  problems: Problems,
): void {
  if (!sameHash(leafHash(entry), stored)) problems.add(`entry ${index}: its stored leaf hash is not its bytes' hash`);
  const event = parseEntry(entry);
  if (event === undefined) {
    problems.add(`entry ${index}: not a log entry in its canonical form`);
    return;
  }
  if (event.kind === "final") counts.finals += 1;
  else counts.cancellations += 1;
  const before = logged.get(event.raceId);
  if (before !== undefined) problems.add(`race ${event.raceId}: logged twice, entries ${before.index} and ${index}`);
  else logged.set(event.raceId, { index, sha: createHash("sha256").update(entry).digest("base64") });
}

/** Each stored tile hash (levels 1 and up) of the integrated tree against the root of the entries under it. */
async function compareTileHashes(
  store: LogStore,
  treeSize: number,
  computed: ReadonlyMap<string, Hash>,
  problems: Problems,
): Promise<void> {
  for (let level = 1; TILE_WIDTH ** level <= treeSize; level++) {
    const count = Math.floor(treeSize / TILE_WIDTH ** level);
    const stored = await store.hashes(level, 0, count + 1);
    if (stored.length !== count) problems.add(`tile level ${level}: ${stored.length} hashes stored, ${count} expected`);
    stored.slice(0, count).forEach((hash, index) => {
      const root = computed.get(`${level}/${index}`);
      if (root === undefined || !sameHash(root, hash)) {
        problems.add(`tile hash ${level}/${index}: not the root of the entries under it`);
      }
    });
  }
}

/** Every race the database says the log should hold, against what it holds; what is left is logged for nothing. */
async function compareWithRaces(
  races: LoggableRaces,
  beganAt: number,
  logged: EntriesRead["logged"],
  problems: Problems,
): Promise<{ checked: number; beforeLog: number }> {
  let checked = 0;
  let beforeLog = 0;
  for (let after = 0; ; ) {
    const page = await races(after, BATCH);
    for (const { event } of page) {
      checked += 1;
      const found = logged.get(event.raceId);
      logged.delete(event.raceId);
      if (event.at < beganAt && found === undefined) {
        beforeLog += 1;
        continue;
      }
      const what = `${event.kind === "final" ? "final" : "cancelled"} at ${new Date(event.at * 1000).toISOString()}`;
      if (found === undefined) problems.add(`race ${event.raceId} (${what}): not in the log`);
      else if (found.sha !== createHash("sha256").update(entryText(event), "utf8").digest("base64")) {
        problems.add(`race ${event.raceId} (${what}): entry ${found.index} is not what the database holds`);
      }
    }
    if (page.length < BATCH) break;
    after = page.at(-1)?.key ?? after;
  }
  for (const [raceId, { index }] of logged) {
    problems.add(`entry ${index}: race ${raceId} is neither final nor cancelled after its start in the database`);
  }
  return { checked, beforeLog };
}
