/**
 * The results log's sequencer as a background job: every LOG_SEQUENCE_MS (jobs/every.ts: the next run once the last
 * has ended, the first at once) it integrates what was appended since the last checkpoint and signs a new one
 * (results-log/core/sequencer.ts). Every instance runs it; the log's lock lets one at a time work, and the others
 * find nothing left. A run that found entries asks for the next at once (more may have come meanwhile); a failed
 * run is logged and the next tries again.
 */
import type { Logger } from "../platform/logger.js";
import type { Sequencer } from "../results-log/core/sequencer.js";
import { every, type Repeating } from "./every.js";

export function startLogSequencer(sequencer: Pick<Sequencer, "run">, intervalMs: number, logger: Logger): Repeating {
  return every(
    intervalMs,
    async () => {
      const made = await sequencer.run();
      return made !== undefined && made.entries > 0 ? 0 : undefined;
    },
    { onError: (error) => logger.warn({ err: error }, "the results log's sequencer failed; the next run tries again") },
  );
}
