/**
 * The results log's sequencer as a background job: every LOG_SEQUENCE_MS (jobs/every.ts: the next run once the last
 * has ended, the first at once) it integrates what was appended since the last checkpoint and signs a new one
 * (results-log/core/sequencer.ts). Every instance runs it; the log's lock lets one at a time work, and the others
 * find nothing left. The next run waits the whole interval even after a busy one, so a steady stream of freezes is
 * signed in batches (about two checkpoints a second per instance, not one per freeze); a failed run is logged and
 * the next tries again.
 *
 * What each run saw is in the metrics (docs/operations.md, "The results log"): the entries appended, the newest
 * checkpoint's size, the runs by result, and for how long the log has held entries no checkpoint signs
 * (`topwagers_results_log_behind_seconds`, which the TopwagersResultsLogCheckpointStale alert watches).
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { Logger } from "../platform/logger.js";
import type { Sequencer } from "../results-log/core/sequencer.js";
import { every, type Repeating } from "./every.js";

export function startLogSequencer(
  sequencer: Pick<Sequencer, "run" | "progress">,
  intervalMs: number,
  logger: Logger,
  registry: Registry,
): Repeating {
  const observe = logMetrics(registry);
  return every(
    intervalMs,
    async () => {
      try {
        const made = await sequencer.run();
        observe.run(made === undefined ? "nothing_new" : "signed", sequencer.progress());
      } catch (error) {
        observe.run("failed", sequencer.progress());
        throw error;
      }
    },
    { onError: (error) => logger.warn({ err: error }, "the results log's sequencer failed; the next run tries again") },
  );
}

const RESULTS = ["signed", "nothing_new", "failed"] as const;

/** The log's families, and what one run adds to them (`now`: Unix seconds, for tests). */
export function logMetrics(registry: Registry, now: () => number = () => Date.now() / 1000) {
  const runs = new Counter({
    name: "topwagers_results_log_sequencer_runs_total",
    help: "Runs of this instance's results log sequencer, by result: signed (a new checkpoint), nothing_new, failed.",
    labelNames: ["result"],
    registers: [registry],
  });
  for (const result of RESULTS) runs.inc({ result }, 0);
  const entries = new Gauge({
    name: "topwagers_results_log_entries",
    help: "Entries appended to the results log, as this instance's last sequencer run read them.",
    registers: [registry],
  });
  const size = new Gauge({
    name: "topwagers_results_log_checkpoint_size",
    help: "The tree size of the newest results log checkpoint this instance's last sequencer run saw.",
    registers: [registry],
  });
  /** Since when the last runs have seen entries beyond the checkpoint. */
  let behindSince: number | undefined;
  // Read when scraped, so a run that never ends (a lock held, a database away) shows as the log falling behind.
  new Gauge({
    name: "topwagers_results_log_behind_seconds",
    help: "For how long this instance has seen results log entries that no checkpoint signs yet (0 when none).",
    registers: [registry],
    collect() {
      this.set(behindSince === undefined ? 0 : now() - behindSince);
    },
  });
  return {
    run(result: (typeof RESULTS)[number], progress: { readonly appended: number; readonly signed: number }) {
      runs.inc({ result });
      entries.set(progress.appended);
      size.set(progress.signed);
      if (progress.appended <= progress.signed) behindSince = undefined;
      else behindSince ??= now();
    },
  };
}
