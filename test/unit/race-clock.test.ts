/**
 * The race clock of server.ts: a tick at once, then one every interval after the last one finished
 * (never two at once), a failed tick logged and the clock going on, and stop() waiting for the tick
 * under way and starting no other.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import { startRaceClock } from "../../src/server.js";

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
});
