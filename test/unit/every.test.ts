/**
 * The background jobs' one loop (src/jobs/every.ts): when each step runs, on a clock the test moves.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { every } from "../../src/jobs/every.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});

afterEach(() => {
  vi.useRealTimers();
});

/** A step that takes `takesMs` and records when it started. */
function recordingStep(takesMs: number, starts: number[], returns?: () => number | undefined) {
  return async () => {
    starts.push(Date.now());
    if (takesMs > 0) await new Promise((resolve) => setTimeout(resolve, takesMs));
    return returns?.();
  };
}

describe("every(ms, step)", () => {
  it("runs the first step at once, then `ms` after each step ended, never two at once", async () => {
    const starts: number[] = [];
    const job = every(100, recordingStep(30, starts));
    await vi.advanceTimersByTimeAsync(300);
    // 0 (ends 30), 130 (ends 160), 260 (ends 290).
    expect(starts).toEqual([0, 130, 260]);
    await job.stop();
  });

  it("runs the next step after the delay a step returns instead (0: the timers' next turn, 1 ms)", async () => {
    const starts: number[] = [];
    const delays = [0, 10];
    const job = every(
      100,
      recordingStep(5, starts, () => delays.shift()),
    );
    await vi.advanceTimersByTimeAsync(150);
    // 0 (ends 5, asks 0), 6 (ends 11, asks 10), 21 (ends 26, asks nothing: 100), 126.
    expect(starts).toEqual([0, 6, 21, 126]);
    await job.stop();
  });

  it("wake() runs the next step now, or right after the step under way", async () => {
    const starts: number[] = [];
    const job = every(1_000, recordingStep(50, starts));
    await vi.advanceTimersByTimeAsync(200);
    job.wake(); // waiting: now
    await vi.advanceTimersByTimeAsync(10);
    job.wake(); // under way (200 to 250): right after it, on the timers' next turn
    await vi.advanceTimersByTimeAsync(60);
    expect(starts).toEqual([0, 200, 251]);
    await vi.advanceTimersByTimeAsync(50);
    await job.stop();
  });

  it("stop() lets the step under way end and runs none after it", async () => {
    const starts: number[] = [];
    let ended = 0;
    const job = every(10, async () => {
      starts.push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, 40));
      ended += 1;
    });
    await vi.advanceTimersByTimeAsync(20);
    const stopped = job.stop();
    await vi.advanceTimersByTimeAsync(40);
    await stopped;
    expect(ended).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(starts).toEqual([0]);
    job.wake();
    await vi.advanceTimersByTimeAsync(200);
    expect(starts).toEqual([0]);
  });

  it("hands a step's error to onError and goes on at its interval", async () => {
    const errors: unknown[] = [];
    const starts: number[] = [];
    const job = every(
      50,
      () => {
        starts.push(Date.now());
        throw new Error(`step ${starts.length}`);
      },
      { onError: (error) => errors.push((error as Error).message) },
    );
    await vi.advanceTimersByTimeAsync(120);
    expect(starts).toEqual([0, 50, 100]);
    expect(errors).toEqual(["step 1", "step 2", "step 3"]);
    await job.stop();
  });

  it('with first: "after", the first step waits `ms`', async () => {
    const starts: number[] = [];
    const job = every(100, recordingStep(0, starts), { first: "after" });
    await vi.advanceTimersByTimeAsync(250);
    expect(starts).toEqual([100, 200]);
    await job.stop();
  });
});
