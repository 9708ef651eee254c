/**
 * How boards were answered in this process, by plan: `threshold` (a long period read month by month, best rows
 * first, until the rest cannot reach the board: ../boards/sql/threshold-board.ts), `rollup` (every user's rows of
 * the period summed: periods of fewer than 3 whole months, affiliates of fewer than 500 users, and databases
 * before migration 25) and `fallback` (the
 * threshold plan tried and gave up, then the rollup plan). Counted by the boards' statements, exported as
 * `topwagers_board_plan_total` (../platform/observability/metrics.ts). One tally per process: every app in it
 * shares the database's boards.
 */
export const BOARD_PLANS = ["threshold", "rollup", "fallback"] as const;
export type BoardPlan = (typeof BOARD_PLANS)[number];

const taken: Record<BoardPlan, number> = { threshold: 0, rollup: 0, fallback: 0 };

export function countBoardPlan(plan: BoardPlan): void {
  taken[plan] += 1;
}

/** Boards answered by each plan since the process started. */
export function boardPlansTaken(): Readonly<Record<BoardPlan, number>> {
  return { ...taken };
}
