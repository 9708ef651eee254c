/** Arrival times of board changes at viewers, for push latency: shared by the live and fleet viewer processes. */

/**
 * A viewer's board now shows `count` (calls, changes) where it showed `last` before: each count in between
 * arrived at `at` (ms). Kept by board, then by count.
 */
export function noteArrivals(
  byBoard: Map<number, Map<number, number[]>>,
  board: number,
  last: number,
  count: number,
  at: number,
): void {
  let byCount = byBoard.get(board);
  if (byCount === undefined) {
    byCount = new Map();
    byBoard.set(board, byCount);
  }
  for (let k = last + 1; k <= count; k++) {
    const list = byCount.get(k);
    if (list === undefined) byCount.set(k, [at]);
    else list.push(at);
  }
}
