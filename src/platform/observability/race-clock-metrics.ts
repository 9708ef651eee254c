/**
 * The race clock's health (docs/operations.md, "Race clock"): steps that failed, by step, and how long the
 * oldest step still to take has been due, read from the database (so any instance shows it, whichever
 * instance's clock should have taken it). Registered in the app's registry beside metrics.ts's families.
 */
import { Counter, Gauge, type Registry } from "prom-client";

export interface RaceClockMetrics {
  readonly stepFailures: Counter<"step">;
  readonly overdueSeconds: Gauge;
}

export function raceClockMetrics(registry: Registry): RaceClockMetrics {
  const stepFailures = new Counter({
    name: "topwagers_race_step_failures_total",
    help:
      "Race clock steps that failed on this instance, by step (start, end, freeze); the race is tried again after " +
      "1 s, 2 s, 4 s … up to 5 min while the other races go on.",
    labelNames: ["step"],
    registers: [registry],
  });
  for (const step of ["start", "end", "freeze"]) stepFailures.inc({ step }, 0);
  const overdueSeconds = new Gauge({
    name: "topwagers_race_step_overdue_seconds",
    help:
      "How long the oldest race step not yet taken (a start or end to announce, a freeze) has been due, as this " +
      "instance last read it from the database (0: none is late).",
    registers: [registry],
  });
  return { stepFailures, overdueSeconds };
}
