/**
 * The results log's sequencer as a background job: every LOG_SEQUENCE_MS (jobs/every.ts: the next run once the last
 * has ended, the first at once) it integrates what was appended since the last checkpoint and signs a new one
 * (results-log/core/sequencer.ts). Every instance runs it; the log's lock lets one at a time work, and the others
 * find nothing left. The next run waits the whole interval even after a busy one, so a steady stream of freezes is
 * signed in batches (about two checkpoints a second per instance, not one per freeze); a failed run is logged and
 * the next tries again.
 */
import type { Logger } from "../platform/logger.js";
import type { Sequencer } from "../results-log/core/sequencer.js";
import { every, type Repeating } from "./every.js";

export function startLogSequencer(sequencer: Pick<Sequencer, "run">, intervalMs: number, logger: Logger): Repeating {
  return every(
    intervalMs,
    async () => {
      await sequencer.run();
    },
    { onError: (error) => logger.warn({ err: error }, "the results log's sequencer failed; the next run tries again") },
  );
}
