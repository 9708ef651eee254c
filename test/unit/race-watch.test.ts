/**
 * The race fan-out: one poll per watched race whatever its viewers, a change sent once to each
 * viewer, nothing sent when only the clock moved, a heartbeat after a quiet spell, resume by
 * version, a slow viewer dropped, and not-found refused at open.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { RaceNotWatchable, type RaceViewer, RaceWatch, raceVersion } from "../../src/races/core/race-watch.js";
import type { RaceOutcome, RaceView } from "../../src/races/core/races.js";

function view(prize: string, now: number): RaceView {
  return {
    race: { id: "race_aaaaaaaaaaaaaaaaaaaa", slug: "monthly" } as RaceView["race"],
    state: "live",
    now,
    finalAt: 2_000,
    next: null,
    entries: [
      { rank: 1, userId: "u1", username: "alice", avatar: "a", totalWagered: "10", weightedWagered: "10", prize },
    ],
    unallocated: "0",
  };
}

class Recorder implements RaceViewer {
  readonly protocol = "test";
  readonly got: string[] = [];
  ended: string | undefined;
  constructor(private readonly drains = true) {}
  race(v: RaceView, version: string): boolean {
    this.got.push(`race ${v.entries[0]?.prize} ${version === raceVersion(v)}`);
    return this.drains;
  }
  heartbeat(): boolean {
    this.got.push("heartbeat");
    return this.drains;
  }
  end(reason: string): void {
    this.ended = reason;
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe("RaceWatch", () => {
  it("polls each race once per interval, sends changes once, ignores the clock, and beats when quiet", async () => {
    vi.useFakeTimers();
    let prize = "5";
    let calls = 0;
    const races = {
      get: async (): Promise<RaceOutcome<RaceView>> => {
        calls += 1;
        return { kind: "ok", value: view(prize, 1000 + calls) };
      },
    };
    const watch = new RaceWatch({ races, pollMs: 100, heartbeatMs: 250, nowMs: () => Date.now() });
    const a = new Recorder();
    const b = new Recorder();
    await watch.open(1, "monthly", a);
    await watch.open(1, "monthly", b);
    expect(calls).toBe(1);
    expect(a.got).toEqual(["race 5 true"]);
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(2);
    expect(a.got).toEqual(["race 5 true"]);
    prize = "7";
    await vi.advanceTimersByTimeAsync(100);
    expect(calls).toBe(3);
    expect(a.got).toEqual(["race 5 true", "race 7 true"]);
    expect(b.got).toEqual(["race 5 true", "race 7 true"]);
    await vi.advanceTimersByTimeAsync(300);
    expect(a.got).toEqual(["race 5 true", "race 7 true", "heartbeat"]);
    watch.shutdown();
    expect(a.ended).toBe("shutdown");
  });

  it("resumes without resending the same version, and drops a viewer that does not drain", async () => {
    const races = { get: async (): Promise<RaceOutcome<RaceView>> => ({ kind: "ok", value: view("5", 1) }) };
    const watch = new RaceWatch({ races, pollMs: 1000, heartbeatMs: 1000 });
    const resumed = new Recorder();
    await watch.open(1, "monthly", resumed, raceVersion(view("5", 99)));
    expect(resumed.got).toEqual([]);
    const slow = new Recorder(false);
    await watch.open(1, "monthly", slow);
    expect(slow.ended).toBe("slow");
    expect(watch.viewers).toBe(1);
    watch.shutdown();
  });

  it("refuses a race that is not found", async () => {
    const races = {
      get: async (): Promise<RaceOutcome<RaceView>> => ({ kind: "not-found", id: "nope" }),
    };
    const watch = new RaceWatch({ races, pollMs: 1000, heartbeatMs: 1000 });
    await expect(watch.open(1, "nope", new Recorder())).rejects.toBeInstanceOf(RaceNotWatchable);
    watch.shutdown();
  });
});
