/**
 * The race clock of server.ts: a tick at once, then one every interval after the last one finished
 * (never two at once), a failed tick logged and the clock going on, and stop() waiting for the tick
 * under way and starting no other; a race's failed step logged once (without failing the tick), counted by
 * step, and how late the oldest step is read into its gauge.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { startRaceClock } from "../../src/jobs/race-clock.js";
import { silentLogger } from "../../src/platform/logger.js";
import { raceClockMetrics } from "../../src/platform/observability/race-clock-metrics.js";
import type { StepFailure } from "../../src/races/core/step-retry.js";

const NOTHING = { started: 0, ended: 0, frozen: 0 };

describe("startRaceClock", () => {
  it("ticks at once, never overlaps a slow tick, survives a failed one, and stops after the tick under way", async () => {
    let running = 0;
    let most = 0;
    let ticks = 0;
    const warnings: unknown[] = [];
    const clock = startRaceClock(
      {
        async tick() {
          ticks += 1;
          running += 1;
          most = Math.max(most, running);
          await new Promise((resolve) => setTimeout(resolve, 30));
          running -= 1;
          if (ticks === 2) throw new Error("database down");
          return NOTHING;
        },
      },
      5,
      Object.assign(Object.create(silentLogger) as typeof silentLogger, {
        warn: (details: unknown) => warnings.push(details),
      }),
    );
    expect(ticks).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await clock.stop();
    const stoppedAt = ticks;
    expect(running).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ticks).toBe(stoppedAt);
    expect(ticks).toBeGreaterThanOrEqual(3);
    expect(most).toBe(1);
    expect(warnings).toHaveLength(1);
  });

  it("logs a race's failed step once with its fields, counts it by step, and reads the overdue gauge", async () => {
    const warnings: [Record<string, unknown>, string][] = [];
    const registry = new Registry();
    const failure: StepFailure = {
      raceId: "race_stuck",
      affiliateId: "aff",
      slug: "stuck",
      step: "freeze",
      failures: 3,
      overdueSeconds: 4,
      retryAt: 1_800_000_008,
      error: new Error("refused"),
    };
    let ticks = 0;
    const clock = startRaceClock(
      {
        async tick(onFailure) {
          ticks += 1;
          if (ticks === 1) onFailure?.(failure);
          return NOTHING;
        },
        overdueSeconds: async () => 42,
      },
      60_000,
      Object.assign(Object.create(silentLogger) as typeof silentLogger, {
        warn: (details: Record<string, unknown>, message: string) => warnings.push([details, message]),
      }),
      raceClockMetrics(registry),
    );
    await clock.stop();
    expect(ticks).toBe(1);
    expect(warnings).toHaveLength(1);
    const [fields, message] = warnings[0] as [Record<string, unknown>, string];
    expect(message).toBe("race race_stuck: its freeze failed; tried again later");
    // Every field of the failure, its error under pino's key `err`.
    const { error, ...rest } = failure;
    expect(fields).toEqual({ ...rest, err: error });
    const text = await registry.metrics();
    expect(text).toContain('topwagers_race_step_failures_total{step="freeze"} 1\n');
    expect(text).toContain('topwagers_race_step_failures_total{step="start"} 0\n');
    expect(text).toContain("topwagers_race_step_overdue_seconds 42\n");
  });
});
