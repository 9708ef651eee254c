/**
 * The periods live boards show on this instance, counted by board (a period is shown by one board per list length
 * and ranking). The live boards add and remove their boards; the leaderboard keeps a watched period's cached answer
 * longer (every change touching it drops it anyway), and the fleet's metrics count the periods this instance leads.
 */
import type { FleetPeriod } from "../../ports/fleet.js";
import { periodKey } from "./fleet-standings.js";

interface PeriodOf {
  readonly affiliateId: number;
  readonly start: number;
  readonly end: number;
  readonly rankBy?: FleetPeriod["rankBy"];
}

export class WatchedPeriods {
  private readonly boards = new Map<string, { period: FleetPeriod; boards: number }>();

  add(board: PeriodOf): void {
    const period = periodOf(board);
    const key = periodKey(period);
    const entry = this.boards.get(key);
    if (entry === undefined) this.boards.set(key, { period, boards: 1 });
    else entry.boards += 1;
  }

  remove(board: PeriodOf): void {
    const key = periodKey(periodOf(board));
    const entry = this.boards.get(key);
    if (entry === undefined) return;
    entry.boards -= 1;
    if (entry.boards <= 0) this.boards.delete(key);
  }

  has(period: FleetPeriod): boolean {
    return this.boards.has(periodKey(period));
  }

  /** Every period shown now. */
  periods(): FleetPeriod[] {
    return [...this.boards.values()].map((entry) => entry.period);
  }
}

function periodOf(board: PeriodOf): FleetPeriod {
  return { affiliateId: board.affiliateId, start: board.start, end: board.end, rankBy: board.rankBy ?? "wagered" };
}
