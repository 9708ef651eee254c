/**
 * Ingest: how users and wagers get in. Validate the whole batch first (every
 * problem, each with its item's index and id), then write it all or nothing
 * through the storage write path. Results are values, not exceptions, so the
 * RPC skin, `import` and `seed` each decide how to report a refusal.
 */
import type { IngestStore, RecordOutcome, UserProfile, VoidOutcome, WagerRecord } from "../../ports/ingest.js";
import { idProblems } from "../../values/platform-id.js";
import { checkUser, checkWager, MAX_BATCH, type WagerInput } from "./validation.js";

/** One item of a batch that breaks a rule. */
export interface ItemProblem {
  /** Position in the request's list, from 0. */
  readonly index: number;
  readonly id: string;
  readonly problems: readonly string[];
}

export type Invalid = {
  readonly kind: "invalid";
  /** A problem of the batch as a whole (its size). */
  readonly batchProblem?: string;
  readonly items: readonly ItemProblem[];
};

export type RecordWagersResult = RecordOutcome | Invalid;
export type UpsertUsersResult = { readonly kind: "upserted"; readonly upserted: number } | Invalid;

export type VoidWagersResult = ({ readonly kind: "voided" } & VoidOutcome) | Invalid;

export interface IngestCounters {
  /** Called after a commit with what it did. */
  recorded?(recorded: number, duplicates: number): void;
  upserted?(users: number): void;
  voided?(outcome: VoidOutcome): void;
}

export interface WagerIngestOptions {
  /** Current Unix time in seconds (wagers may be at most 5 minutes ahead of it). */
  readonly now?: () => number;
  readonly counters?: IngestCounters;
  /** Called after every commit that may change a leaderboard (the app reads its change feed at once). */
  readonly onCommitted?: () => void;
}

export class WagerIngest {
  private readonly now: () => number;

  constructor(
    /** The write path (ingest/sql/ingest-store.ts on MariaDB). */
    private readonly store: IngestStore,
    private readonly options: WagerIngestOptions = {},
  ) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  async upsertUsers(users: readonly UserProfile[]): Promise<UpsertUsersResult> {
    const batchProblem = batchSizeProblem(users.length, "users");
    const items: ItemProblem[] = [];
    for (const [index, user] of users.entries()) {
      const checked = checkUser(user);
      if (!checked.ok) items.push({ index, id: user.id, problems: checked.problems });
    }
    if (batchProblem !== undefined || items.length > 0) return invalid(batchProblem, items);
    const upserted = await this.store.upsertUsers(users);
    this.options.counters?.upserted?.(upserted);
    if (upserted > 0) this.options.onCommitted?.();
    return { kind: "upserted", upserted };
  }

  async recordWagers(wagers: readonly WagerInput[]): Promise<RecordWagersResult> {
    const batchProblem = batchSizeProblem(wagers.length, "wagers");
    const now = this.now();
    const items: ItemProblem[] = [];
    const valid: WagerRecord[] = [];
    for (const [index, wager] of wagers.entries()) {
      const checked = checkWager(wager, now);
      if (checked.ok) valid.push(checked.value);
      else items.push({ index, id: wager.id, problems: checked.problems });
    }
    if (batchProblem !== undefined || items.length > 0) return invalid(batchProblem, items);
    const outcome = await this.store.recordWagers(valid);
    if (outcome.kind === "recorded") {
      this.options.counters?.recorded?.(outcome.recorded, outcome.duplicates);
      if (outcome.recorded > 0) this.options.onCommitted?.();
    }
    return outcome;
  }

  /** Voids wagers by id (see IngestStore): all or nothing; one bad id refuses the call. */
  async voidWagers(wagerIds: readonly string[]): Promise<VoidWagersResult> {
    const batchProblem = batchSizeProblem(wagerIds.length, "wager ids");
    const items: ItemProblem[] = [];
    for (const [index, id] of wagerIds.entries()) {
      const problems = idProblems("id", id);
      if (problems.length > 0) items.push({ index, id, problems });
    }
    if (batchProblem !== undefined || items.length > 0) return invalid(batchProblem, items);
    const outcome = await this.store.voidWagers(wagerIds);
    this.options.counters?.voided?.(outcome);
    if (outcome.voided > 0) this.options.onCommitted?.();
    return { kind: "voided", ...outcome };
  }
}

function batchSizeProblem(size: number, what: string): string | undefined {
  return size > MAX_BATCH ? `at most ${MAX_BATCH} ${what} per call (got ${size})` : undefined;
}

function invalid(batchProblem: string | undefined, items: ItemProblem[]): Invalid {
  return batchProblem === undefined ? { kind: "invalid", items } : { kind: "invalid", batchProblem, items };
}
