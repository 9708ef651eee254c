/**
 * The race clock as a background job: `races.tick()` every RACE_CLOCK_MS (jobs/every.ts: the next tick only once
 * the last one has finished, the first at once, so a freeze missed while every instance was down happens at
 * start). Starts, ends and freezes happen once however many instances run it (races/sql/races.ts); a failed tick
 * is logged and the clock goes on. A race's step that fails is logged once per wait (races/core/step-retry.ts)
 * and counted; how late the oldest step is gets read every few seconds. `stop()` ends it after the tick under way.
 */
import type { Logger } from "../platform/logger.js";
import type { RaceClockMetrics } from "../platform/observability/race-clock-metrics.js";
import type { Races } from "../races/core/races.js";
import type { StepFailure } from "../races/core/step-retry.js";
import { every, type Repeating } from "./every.js";

/** How often the oldest overdue step is read for its gauge. */
const OVERDUE_READ_EVERY_MS = 5_000;

export function startRaceClock(
  races: Pick<Races, "tick"> & Partial<Pick<Races, "overdueSeconds">>,
  intervalMs: number,
  logger: Logger,
  metrics?: RaceClockMetrics,
): Pick<Repeating, "stop"> {
  let overdueReadAt = 0;
  const onFailure = (failure: StepFailure) => {
    const { error, ...fields } = failure;
    if (failure.waitsForKey === true) {
      // Once per race: the instance's error line says which key and why (services/sealed-keys-health.ts).
      const why = error instanceof Error ? error.message : String(error);
      logger.warn(fields, `race ${failure.raceId}: its freeze waits for a signing key this instance can open: ${why}`);
      return;
    }
    metrics?.stepFailures.inc({ step: failure.step });
    logger.warn({ ...fields, err: error }, `race ${failure.raceId}: its ${failure.step} failed; tried again later`);
  };
  const tick = async () => {
    const steps = await races.tick(onFailure);
    if (steps.started + steps.ended + steps.frozen > 0) logger.info(steps, "race clock");
    if (
      metrics !== undefined &&
      races.overdueSeconds !== undefined &&
      Date.now() - overdueReadAt >= OVERDUE_READ_EVERY_MS
    ) {
      overdueReadAt = Date.now();
      metrics.overdueSeconds.set(await races.overdueSeconds());
    }
  };
  return every(intervalMs, tick, {
    onError: (error) => logger.warn({ err: error }, "race clock tick failed; the next tick tries again"),
  });
}
