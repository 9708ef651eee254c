/**
 * How boards were answered in this process, by plan: `threshold` (a long period read month by month, best rows
 * first, until the rest cannot reach the board: ../boards/sql/threshold-board.ts), `rollup` (every user's rows of
 * the period summed, then the chosen users' totals read: periods of fewer than 3 whole months, and databases
 * before migration 25), `fallback` (the threshold plan tried and gave up, then the rollup plan), and for an
 * affiliate of fewer than 500 users one statement (../boards/core/small-board-plan.ts): `small` over the period's
 * rollup rows and raw edges, `raw` over its raw wagers where those are fewer. Counted by the boards' statements, exported as
 * `topwagers_board_plan_total` (../platform/observability/metrics.ts). One tally per process: every app in it
 * shares the database's boards.
 */
export const BOARD_PLANS = ["threshold", "rollup", "fallback", "small", "raw"] as const;
export type BoardPlan = (typeof BOARD_PLANS)[number];

const taken: Record<BoardPlan, number> = { threshold: 0, rollup: 0, fallback: 0, small: 0, raw: 0 };

export function countBoardPlan(plan: BoardPlan): void {
  taken[plan] += 1;
}

/** Boards answered by each plan since the process started. */
export function boardPlansTaken(): Readonly<Record<BoardPlan, number>> {
  return { ...taken };
}
