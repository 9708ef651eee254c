/**
 * The batches of an import with their state in plain sight: the lines waiting to be written (users,
 * wagers, voids), what was written so far, and the bad-line reports in line order. A full batch is
 * written at once; users before the wagers that name them, wagers before the voids of them.
 */

import { idProblems } from "../../values/platform-id.js";
import { sameWagerContent, type UserProfile } from "../../values/records.js";
import type { Parsed } from "./import-formats.js";
import { checkUser, checkWager, MAX_BATCH, type WagerInput } from "./validation.js";
import type { WagerIngest } from "./wager-ingest.js";

type Pending<T> = { readonly line: number } & T;

export interface ImportCounts {
  readonly users: number;
  readonly recorded: number;
  readonly duplicates: number;
  readonly voided: number;
  readonly alreadyVoided: number;
  readonly pendingVoids: number;
  readonly badLines: number;
}

export class ImportBatches {
  private users: Pending<{ user: UserProfile }>[] = [];
  private wagers: Pending<{ wager: WagerInput }>[] = [];
  /** The pending batch by wager id: a repeat inside the batch is settled here, as it would be line by line. */
  private pendingIds = new Map<string, Pending<{ wager: WagerInput }>>();
  private voids: Pending<{ id: string }>[] = [];
  private readonly reports: LineOrderedReports;
  private usersUpserted = 0;
  private recorded = 0;
  private duplicates = 0;
  /** Lines that repeat a pending wager with the same content: duplicates, never sent. */
  private repeats = 0;
  private voided = 0;
  private alreadyVoided = 0;
  private pendingVoids = 0;
  private badLines = 0;

  constructor(
    private readonly ingest: WagerIngest,
    onBadLine: ((line: number, problem: string) => void) | undefined,
  ) {
    this.reports = new LineOrderedReports(onBadLine);
  }

  /** Reports a bad line (passed on once every earlier line is settled). */
  bad(line: number, problem: string): void {
    this.badLines += 1;
    this.reports.add(line, problem);
  }

  /** Takes one parsed line: checks it, adds it to its batch, and writes the batch when it is full. */
  async take(line: number, parsed: Parsed, now: number): Promise<void> {
    switch (parsed.kind) {
      case "skip":
        break;
      case "bad":
        this.bad(line, parsed.problem);
        break;
      case "user": {
        const checked = checkUser(parsed.user);
        if (!checked.ok) this.bad(line, checked.problems.join("; "));
        else {
          this.users.push({ line, user: parsed.user });
          if (this.users.length === MAX_BATCH) await this.flushUsers();
        }
        break;
      }
      case "void": {
        const problems = idProblems("id", parsed.id);
        if (problems.length > 0) this.bad(line, problems.join("; "));
        else {
          this.voids.push({ line, id: parsed.id });
          if (this.voids.length === MAX_BATCH) await this.flushVoids();
        }
        break;
      }
      case "wager":
        await this.takeWager(line, parsed.wager, now);
        break;
    }
    this.reports.releaseBefore(this.firstUnsettledLine());
  }

  /** Writes every pending batch and passes on the last reports; returns the counts. */
  async finish(): Promise<ImportCounts> {
    await this.flushWagers();
    await this.flushUsers();
    await this.flushVoids();
    this.reports.releaseBefore(Number.POSITIVE_INFINITY);
    return {
      users: this.usersUpserted,
      recorded: this.recorded,
      duplicates: this.duplicates + this.repeats,
      voided: this.voided,
      alreadyVoided: this.alreadyVoided,
      pendingVoids: this.pendingVoids,
      badLines: this.badLines,
    };
  }

  private async takeWager(line: number, wager: WagerInput, now: number): Promise<void> {
    const checked = checkWager(wager, now);
    if (!checked.ok) {
      this.bad(line, checked.problems.join("; "));
      return;
    }
    const earlier = this.pendingIds.get(wager.id);
    if (earlier === undefined) {
      const item = { line, wager };
      this.pendingIds.set(wager.id, item);
      this.wagers.push(item);
      if (this.wagers.length === MAX_BATCH) await this.flushWagers();
    } else if (sameWagerContent(earlier.wager, wager)) {
      this.repeats += 1;
    } else {
      this.bad(
        line,
        `wager ${JSON.stringify(wager.id)} repeats the id of line ${earlier.line} with another user, amount, time or weight`,
      );
    }
  }

  /** The first line still waiting in a batch: a refusal of it can only come at that batch's flush. */
  private firstUnsettledLine(): number {
    return Math.min(
      this.users[0]?.line ?? Number.POSITIVE_INFINITY,
      this.wagers[0]?.line ?? Number.POSITIVE_INFINITY,
      this.voids[0]?.line ?? Number.POSITIVE_INFINITY,
    );
  }

  private async flushUsers(): Promise<void> {
    if (this.users.length === 0) return;
    const batch = this.users;
    this.users = [];
    const result = await this.ingest.upsertUsers(batch.map((u) => u.user));
    if (result.kind !== "upserted") {
      // Lines were checked one by one already; report whatever the batch check still found.
      const refused = new Set(result.items.map((item) => item.index));
      for (const item of result.items) this.bad(batch[item.index]?.line ?? 0, item.problems.join("; "));
      this.users = batch.filter((_, i) => !refused.has(i));
      if (result.items.length > 0) return this.flushUsers();
      throw new Error(result.batchProblem ?? "users refused");
    }
    this.usersUpserted += result.upserted;
  }

  /** Reports each wager of the batch that `problem` finds fault with as a bad line; returns their indexes. */
  private refuse(
    batch: readonly Pending<{ wager: WagerInput }>[],
    problem: (wager: WagerInput) => string | undefined,
  ): Set<number> {
    const indexes = new Set<number>();
    for (const [i, w] of batch.entries()) {
      const text = problem(w.wager);
      if (text === undefined) continue;
      this.bad(w.line, text);
      indexes.add(i);
    }
    return indexes;
  }

  private async flushWagers(): Promise<void> {
    await this.flushUsers();
    let batch = this.wagers;
    this.wagers = [];
    this.pendingIds = new Map();
    while (batch.length > 0) {
      const result = await this.ingest.recordWagers(batch.map((w) => w.wager));
      let refused: Set<number>;
      switch (result.kind) {
        case "recorded":
          this.recorded += result.recorded;
          this.duplicates += result.duplicates;
          return;
        case "invalid":
          if (result.items.length === 0) throw new Error(result.batchProblem ?? "wagers refused");
          for (const item of result.items) this.bad(batch[item.index]?.line ?? 0, item.problems.join("; "));
          refused = new Set(result.items.map((item) => item.index));
          break;
        case "unknown_users": {
          const unknown = new Set(result.userIds);
          refused = this.refuse(batch, ({ userId }) =>
            unknown.has(userId)
              ? `user ${JSON.stringify(userId)} is unknown (not among the user lines so far, not stored)`
              : undefined,
          );
          break;
        }
        case "conflict": {
          const conflicting = new Set(result.wagerIds);
          refused = this.refuse(batch, ({ id }) =>
            conflicting.has(id)
              ? `wager ${JSON.stringify(id)} was already recorded with another user, amount, time or weight`
              : undefined,
          );
          break;
        }
      }
      // Every refusal names at least one line, so this loop ends.
      batch = batch.filter((_, i) => !refused.has(i));
    }
  }

  private async flushVoids(): Promise<void> {
    if (this.voids.length === 0) return;
    // Wagers first, so a void of a wager earlier in the file finds it recorded (either order is exact).
    await this.flushWagers();
    const batch = this.voids;
    this.voids = [];
    const result = await this.ingest.voidWagers(batch.map((v) => v.id));
    if (result.kind === "invalid") {
      // Ids were checked line by line already; a refusal here is a bug, not data.
      throw new Error(result.batchProblem ?? "void ids refused");
    }
    this.voided += result.voided;
    this.alreadyVoided += result.alreadyVoided;
    this.pendingVoids += result.pending;
  }
}

/**
 * Bad-line reports, passed on in line order: a line refused at its batch's flush (an unknown user, a
 * conflict) was read before lines already refused on their own, so reports wait until every earlier
 * line is settled.
 */
class LineOrderedReports {
  private held: { line: number; problem: string }[] = [];
  private sorted = true;

  constructor(private readonly report: ((line: number, problem: string) => void) | undefined) {}

  add(line: number, problem: string): void {
    const last = this.held.at(-1);
    if (last !== undefined && line < last.line) this.sorted = false;
    this.held.push({ line, problem });
  }

  /** Passes on every held report of a line before `line`, in line order (the same line: in the order found). */
  releaseBefore(line: number): void {
    if (!this.sorted) {
      this.held.sort((a, b) => a.line - b.line); // stable: one line's reports keep their order
      this.sorted = true;
    }
    const count = this.held.findIndex((r) => r.line >= line);
    const released = this.held.splice(0, count < 0 ? this.held.length : count);
    for (const r of released) this.report?.(r.line, r.problem);
  }
}
