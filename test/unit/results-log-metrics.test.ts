/**
 * The results log's metrics as the sequencer job sets them (jobs/results-log.ts): entries, the checkpoint's size,
 * runs by result, and for how long entries have waited for a checkpoint, read when scraped (a run that hangs shows
 * as the log falling behind). The TopwagersResultsLogCheckpointStale alert watches the last one.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { logMetrics } from "../../src/jobs/results-log.js";

async function sample(registry: Registry): Promise<string[]> {
  return (await registry.metrics()).split("\n").filter((line) => line !== "" && !line.startsWith("#"));
}

describe("the results log's metrics", () => {
  it("count each run, and time entries beyond the checkpoint from the first run that saw them until one signs them", async () => {
    const registry = new Registry();
    let clock = 1_000;
    const observe = logMetrics(registry, () => clock);
    expect(await sample(registry)).toEqual([
      'topwagers_results_log_sequencer_runs_total{result="signed"} 0',
      'topwagers_results_log_sequencer_runs_total{result="nothing_new"} 0',
      'topwagers_results_log_sequencer_runs_total{result="failed"} 0',
      "topwagers_results_log_entries 0",
      "topwagers_results_log_checkpoint_size 0",
      "topwagers_results_log_behind_seconds 0",
    ]);
    observe.run("signed", { appended: 3, signed: 3 });
    observe.run("failed", { appended: 5, signed: 3 });
    clock += 42.5;
    // No run since: a scrape still sees the time grow.
    expect(await sample(registry)).toEqual([
      'topwagers_results_log_sequencer_runs_total{result="signed"} 1',
      'topwagers_results_log_sequencer_runs_total{result="nothing_new"} 0',
      'topwagers_results_log_sequencer_runs_total{result="failed"} 1',
      "topwagers_results_log_entries 5",
      "topwagers_results_log_checkpoint_size 3",
      "topwagers_results_log_behind_seconds 42.5",
    ]);
    observe.run("nothing_new", { appended: 6, signed: 3 });
    clock += 10;
    expect((await sample(registry)).at(-1)).toBe("topwagers_results_log_behind_seconds 52.5");
    observe.run("signed", { appended: 6, signed: 6 });
    clock += 10;
    expect((await sample(registry)).slice(-3)).toEqual([
      "topwagers_results_log_entries 6",
      "topwagers_results_log_checkpoint_size 6",
      "topwagers_results_log_behind_seconds 0",
    ]);
  });
});
