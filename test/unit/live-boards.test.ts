/**
 * The live-board hub alone (no database, no sockets): one entry per board,
 * recomputes coalesced (one in flight, one pending), identical answers send
 * nothing, boards without viewers dropped, limits, slow viewers, heartbeats,
 * shutdown, and database failures that keep streams open.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type BoardSnapshot, boardVersion } from "../../src/boards/core/board-snapshot.js";
import type { BoardChange } from "../../src/boards/core/change-set.js";
import type { RankedUser } from "../../src/boards/core/leaderboard.js";
import type { BoardQuery, Viewer } from "../../src/boards/core/live-board.js";
import { LiveBoards, LiveShutdownError } from "../../src/boards/core/live-boards.js";
import { StreamLimitError, type ViewerOwner } from "../../src/boards/core/stream-quota.js";

const BOARD: BoardQuery = { affiliateId: 7, start: 1_000, end: 2_000, numUsers: 3 };
const NOW_MS = 5_000_000;

function user(userId: string, total: string, rank = 1, username = userId): RankedUser {
  return { rank, userId, username, avatar: "https://a.example/x.png", totalWagered: total, weightedWagered: total };
}

/** A load port the test answers by hand, one call at a time. */
class Loads {
  readonly calls: { board: BoardQuery; resolve: (r: readonly RankedUser[]) => void; reject: (e: unknown) => void }[] =
    [];
  load = (board: BoardQuery) =>
    new Promise<readonly RankedUser[]>((resolve, reject) => this.calls.push({ board, resolve, reject }));

  /** Answers the oldest unanswered call. */
  async answer(ranked: readonly RankedUser[]): Promise<void> {
    const call = this.calls[this.answered++];
    if (call === undefined) throw new Error("no load to answer");
    call.resolve(ranked);
    await flush();
  }

  async fail(error: unknown): Promise<void> {
    const call = this.calls[this.answered++];
    if (call === undefined) throw new Error("no load to fail");
    call.reject(error);
    await flush();
  }

  answered = 0;
  get waiting(): number {
    return this.calls.length - this.answered;
  }
}

async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

class TestViewer implements Viewer {
  readonly received: { kind: "board" | "heartbeat"; version: string; ranked: readonly RankedUser[] }[] = [];
  ended: string | undefined;
  accepting = true;
  constructor(readonly protocol = "sse") {}
  board(snapshot: BoardSnapshot): boolean {
    if (!this.accepting) return false;
    this.received.push({ kind: "board", version: snapshot.version, ranked: snapshot.ranked });
    return true;
  }
  heartbeat(snapshot: BoardSnapshot): boolean {
    if (!this.accepting) return false;
    this.received.push({ kind: "heartbeat", version: snapshot.version, ranked: [] });
    return true;
  }
  end(reason: "slow" | "shutdown"): void {
    this.ended = reason;
  }
  boards() {
    return this.received.filter((r) => r.kind === "board");
  }
}

const events: string[] = [];
let loads: Loads;
let hub: LiveBoards;

function makeHub(limits = { perKey: 100, perAddress: 100, total: 100 }) {
  return new LiveBoards({
    load: loads.load,
    heartbeatMs: 15_000,
    limits,
    nowMs: () => Date.now(),
    observer: {
      delivered: (protocol, n) => events.push(`delivered ${protocol} ${n}`),
      disconnected: (reason) => events.push(`disconnected ${reason}`),
      recomputed: () => events.push("recomputed"),
    },
  });
}

/** Opens a viewer on BOARD and answers the first load if one is waiting. */
async function openWith(
  viewer: TestViewer,
  first?: readonly RankedUser[],
  resume?: string,
  owner: ViewerOwner = { keyId: "k", address: "a", scope: "boards:read" },
) {
  const opening = hub.open(BOARD, owner, viewer, resume);
  await flush();
  if (first !== undefined) await loads.answer(first);
  return opening;
}

const wagerChange = (affiliateId: number, at: number): BoardChange => ({
  affiliateId,
  firstAt: at,
  lastAt: at,
  userExternalId: undefined,
});
const profileChange = (userId: string): BoardChange => ({
  affiliateId: undefined,
  firstAt: 0,
  lastAt: 0,
  userExternalId: userId,
});

beforeEach(() => {
  vi.useFakeTimers({ now: NOW_MS });
  events.length = 0;
  loads = new Loads();
  hub = makeHub();
});

afterEach(() => {
  vi.useRealTimers();
});

describe("boardVersion", () => {
  it("depends on the content only, and on every field of it", () => {
    const board = [user("u1", "10.5", 1, "ann"), user("u2", "3", 2, "ben")];
    expect(boardVersion(board)).toBe(boardVersion(board.map((u) => ({ ...u }))));
    expect(boardVersion(board)).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const variants = [
      [user("u1", "10.50000001", 1, "ann"), user("u2", "3", 2, "ben")],
      [user("u1", "10.5", 1, "Ann"), user("u2", "3", 2, "ben")],
      [{ ...user("u1", "10.5", 1, "ann"), avatar: "https://a.example/y.png" }, user("u2", "3", 2, "ben")],
      [{ ...user("u1", "10.5", 1, "ann"), weightedWagered: "5.25" }, user("u2", "3", 2, "ben")],
      [user("u1", "10.5", 1, "ann"), user("u3", "3", 2, "ben")],
      [user("u1", "10.5", 1, "ann")],
      [],
    ];
    const versions = new Set([boardVersion(board), ...variants.map(boardVersion)]);
    expect(versions.size).toBe(variants.length + 1);
  });
});

describe("LiveBoards", () => {
  it("shares one entry and one load between the viewers of a board, and sends each the first board", async () => {
    const first = new TestViewer();
    const second = new TestViewer("grpc");
    const a = hub.open(BOARD, { keyId: "k", address: "a", scope: "boards:read" }, first, undefined);
    const b = hub.open(BOARD, { keyId: "k", address: "b", scope: "boards:read" }, second, undefined);
    await flush();
    expect(loads.calls.length).toBe(1);
    await loads.answer([user("u1", "10")]);
    await Promise.all([a, b]);
    expect(hub.boards).toBe(1);
    expect(first.boards().map((r) => r.ranked)).toEqual([[user("u1", "10")]]);
    expect(second.boards().length).toBe(1);
    expect(hub.streams()).toEqual({ sse: 1, grpc: 1 });
    expect(events).toEqual(["recomputed", "delivered sse 1", "delivered grpc 1"]);
  });

  it("coalesces changes during a load into one more load, and sends its result once", async () => {
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    hub.applyChanges([wagerChange(7, 1_500)]);
    hub.applyChanges([wagerChange(7, 1_600)]);
    hub.applyChanges([wagerChange(7, 1_700)]);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "11")]);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "13")]);
    expect(loads.waiting).toBe(0);
    expect(viewer.boards().map((r) => r.ranked[0]?.totalWagered)).toEqual(["10", "11", "13"]);
  });

  it("sends nothing when a recomputed answer is the same", async () => {
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "10")]);
    expect(viewer.received.length).toBe(1);
    expect(events.filter((e) => e === "recomputed").length).toBe(2);
  });

  it("recomputes only the boards a change touches: the affiliate's overlapping periods, and boards listing a changed user", async () => {
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    hub.applyChanges([wagerChange(8, 1_500), wagerChange(7, 999), wagerChange(7, 2_001), profileChange("u9")]);
    expect(loads.waiting).toBe(0);
    hub.applyChanges([wagerChange(7, 2_000)]);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "12")]);
    hub.applyChanges([profileChange("u1")]);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "12", 1, "renamed")]);
    expect(viewer.boards().map((r) => r.ranked[0]?.username)).toEqual(["u1", "u1", "renamed"]);
  });

  it("recomputes a board cut at its length when a user it does not list is renamed (a tie at the cut may move)", async () => {
    const viewer = new TestViewer();
    // BOARD shows 3 users: full at 3, so an unlisted user tied with the third may enter it under a new name.
    await openWith(viewer, [user("u1", "10", 1), user("u2", "8", 2), user("u3", "8", 2)]);
    hub.applyChanges([profileChange("u4")]);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "10", 1), user("u4", "8", 2, "aaa"), user("u2", "8", 2)]);
    expect(
      viewer
        .boards()
        .at(-1)
        ?.ranked.map((u) => u.userId),
    ).toEqual(["u1", "u4", "u2"]);
    // A board shorter than its length lists every user with wagers: an unlisted user's new name changes nothing.
    const short = new TestViewer();
    const opening = hub.open(
      { ...BOARD, numUsers: 5 },
      { keyId: "k", address: "a", scope: "boards:read" },
      short,
      undefined,
    );
    await flush();
    await loads.answer([user("u1", "10")]);
    await opening;
    hub.applyChanges([profileChange("u9")]);
    expect(loads.calls.slice(-1).map((c) => c.board.numUsers)).toEqual([3]);
    expect(loads.waiting).toBe(1);
  });

  it("resumes silently when the viewer already shows the current version", async () => {
    const first = new TestViewer();
    await openWith(first, [user("u1", "10")]);
    const current = boardVersion([user("u1", "10")]);
    const resumed = new TestViewer();
    await openWith(resumed, undefined, current);
    const stale = new TestViewer();
    await openWith(stale, undefined, "an-old-version");
    expect(resumed.received).toEqual([]);
    expect(stale.boards().length).toBe(1);
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "20")]);
    expect(resumed.boards().map((r) => r.ranked[0]?.totalWagered)).toEqual(["20"]);
  });

  it("drops a board when its last viewer leaves, and loads nothing for it afterwards", async () => {
    const viewer = new TestViewer();
    const subscription = await openWith(viewer, [user("u1", "10")]);
    subscription.close();
    subscription.close();
    expect(hub.boards).toBe(0);
    expect(hub.streams()).toEqual({});
    hub.applyChanges([wagerChange(7, 1_500)]);
    expect(loads.waiting).toBe(0);
    expect(events.filter((e) => e.startsWith("disconnected"))).toEqual(["disconnected client"]);
  });

  it("heartbeats after heartbeatMs without a board, with the current version; a board restarts the wait", async () => {
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    await vi.advanceTimersByTimeAsync(14_999);
    expect(viewer.received.length).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(viewer.received.map((r) => r.kind)).toEqual(["board", "heartbeat"]);
    expect(viewer.received[1]?.version).toBe(boardVersion([user("u1", "10")]));
    await vi.advanceTimersByTimeAsync(10_000);
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "11")]);
    await vi.advanceTimersByTimeAsync(14_999);
    expect(viewer.received.map((r) => r.kind)).toEqual(["board", "heartbeat", "board"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(viewer.received.map((r) => r.kind)).toEqual(["board", "heartbeat", "board", "heartbeat"]);
  });

  it("refuses streams over the per-address, per-key and instance limits, and frees places on close", async () => {
    hub = makeHub({ perKey: 3, perAddress: 2, total: 4 });
    const subs = [
      await openWith(new TestViewer(), [user("u1", "1")], undefined, {
        keyId: "k1",
        address: "a1",
        scope: "boards:read",
      }),
      await openWith(new TestViewer(), undefined, undefined, { keyId: "k1", address: "a1", scope: "boards:read" }),
    ];
    await expect(
      openWith(new TestViewer(), undefined, undefined, { keyId: "k1", address: "a1", scope: "boards:read" }),
    ).rejects.toEqual(new StreamLimitError("address", 2));
    subs.push(
      await openWith(new TestViewer(), undefined, undefined, { keyId: "k1", address: "a2", scope: "boards:read" }),
    );
    await expect(
      openWith(new TestViewer(), undefined, undefined, { keyId: "k1", address: "a2", scope: "boards:read" }),
    ).rejects.toEqual(new StreamLimitError("key", 3));
    subs.push(
      await openWith(new TestViewer(), undefined, undefined, { keyId: "k2", address: "a3", scope: "boards:read" }),
    );
    const full = await openWith(new TestViewer(), undefined, undefined, {
      keyId: "k2",
      address: "a3",
      scope: "boards:read",
    }).catch((e: unknown) => e);
    expect(full).toBeInstanceOf(StreamLimitError);
    expect((full as StreamLimitError).scope).toBe("instance");
    subs[0]?.close();
    await openWith(new TestViewer(), undefined, undefined, { keyId: "k1", address: "a1", scope: "boards:read" });
    expect(events.filter((e) => e === "disconnected limit").length).toBe(3);
  });

  it("ends a viewer that cannot take a board as slow, while the others keep receiving", async () => {
    const slow = new TestViewer();
    const fine = new TestViewer();
    await openWith(slow, [user("u1", "10")]);
    await openWith(fine);
    slow.accepting = false;
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "11")]);
    expect(slow.ended).toBe("slow");
    expect(hub.streams()).toEqual({ sse: 1 });
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "12")]);
    expect(fine.boards().map((r) => r.ranked[0]?.totalWagered)).toEqual(["10", "11", "12"]);
    expect(events).toContain("disconnected slow");
  });

  it("fails the opens waiting for a first board that cannot be loaded, and loads again for the next open", async () => {
    const opening = hub.open(BOARD, { keyId: "k", address: "a", scope: "boards:read" }, new TestViewer(), undefined);
    await flush();
    const outage = new Error("database down");
    await loads.fail(outage);
    await expect(opening).rejects.toBe(outage);
    expect(hub.boards).toBe(0);
    expect(hub.streams()).toEqual({});
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    expect(viewer.boards().length).toBe(1);
  });

  it("keeps streams open through a failed recompute: heartbeats go on, the board is tried again and then delivered", async () => {
    const viewer = new TestViewer();
    await openWith(viewer, [user("u1", "10")]);
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.fail(new Error("database down"));
    expect(viewer.ended).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(loads.waiting).toBe(1);
    await loads.fail(new Error("still down"));
    await vi.advanceTimersByTimeAsync(1_999);
    expect(loads.waiting).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "11")]);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(viewer.received.map((r) => r.kind)).toEqual(["board", "board", "heartbeat"]);
  });

  it("computes a board whose period has not started again once it starts", async () => {
    const future = { ...BOARD, start: NOW_MS / 1000 + 60, end: NOW_MS / 1000 + 3_600 };
    const viewer = new TestViewer();
    const opening = hub.open(future, { keyId: "k", address: "a", scope: "boards:read" }, viewer, undefined);
    await flush();
    await loads.answer([]);
    await opening;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(loads.waiting).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(loads.waiting).toBe(1);
    await loads.answer([user("u1", "5")]);
    expect(viewer.boards().map((r) => r.ranked.length)).toEqual([0, 1]);
  });

  it("ends the streams of a revoked key, and only those", async () => {
    const revoked = new TestViewer();
    const other = new TestViewer("grpc");
    const revokedToo = new TestViewer();
    await openWith(revoked, [user("u1", "10")], undefined, { keyId: "k1", address: "a", scope: "boards:read" });
    await openWith(other, undefined, undefined, { keyId: "k2", address: "a", scope: "boards:read" });
    await openWith(revokedToo, undefined, undefined, { keyId: "k1", address: "b", scope: "boards:read" });
    hub.endKeyStreams("k1");
    expect([revoked.ended, other.ended, revokedToo.ended]).toEqual(["revoked", undefined, "revoked"]);
    expect(hub.streams()).toEqual({ grpc: 1 });
    expect(events.filter((e) => e === "disconnected revoked").length).toBe(2);
    hub.applyChanges([wagerChange(7, 1_500)]);
    await loads.answer([user("u1", "11")]);
    expect(other.boards().length).toBe(2);
    expect(revoked.boards().length).toBe(1);
  });

  it("counts held streams (a race's) by protocol and ends them with the key's board streams", async () => {
    const ended: string[] = [];
    const held = (name: string, protocol: string) => ({
      protocol,
      end: (reason: string) => ended.push(`${name} ${reason}`),
    });
    const board = new TestViewer();
    await openWith(board, [user("u1", "10")], undefined, { keyId: "k1", address: "a", scope: "boards:read" });
    const raceSse = hub.hold({ keyId: "k1", address: "a", scope: "races:read" }, held("race sse", "sse"));
    hub.hold({ keyId: "k1", address: "b", scope: "races:read" }, held("race grpc", "grpc"));
    const otherKey = hub.hold({ keyId: "k2", address: "a", scope: "races:read" }, held("other key", "connect"));
    expect(hub.streams()).toEqual({ sse: 2, grpc: 1, connect: 1 });
    hub.endKeyStreams("k1");
    expect([board.ended, ...ended]).toEqual(["revoked", "race sse revoked", "race grpc revoked"]);
    expect(hub.streams()).toEqual({ connect: 1 });
    expect(events.filter((e) => e === "disconnected revoked").length).toBe(3);
    // A release after the revocation gives nothing back twice: k1's slots are free, k2's is still held.
    raceSse();
    expect(hub.streams()).toEqual({ connect: 1 });
    otherKey();
    otherKey();
    expect(hub.streams()).toEqual({});
    expect(events.filter((e) => e === "disconnected client").length).toBe(1);
  });

  it("ends only the streams whose scope the key lost when its scopes change", async () => {
    const ended: string[] = [];
    const board = new TestViewer();
    await openWith(board, [user("u1", "10")], undefined, { keyId: "k1", address: "a", scope: "boards:read" });
    hub.hold({ keyId: "k1", address: "a", scope: "races:read" }, { protocol: "sse", end: (r) => ended.push(r) });
    hub.endKeyStreams("k1", ["boards:read", "races:read"]);
    expect([board.ended, ended]).toEqual([undefined, []]);
    hub.endKeyStreams("k1", ["boards:read"]);
    expect([board.ended, ended]).toEqual([undefined, ["revoked"]]);
    hub.endKeyStreams("k1", ["races:read"]);
    expect([board.ended, hub.streams()]).toEqual(["revoked", {}]);
  });

  it("ends every stream at shutdown and refuses new ones", async () => {
    const a = new TestViewer();
    const b = new TestViewer("grpc");
    await openWith(a, [user("u1", "10")]);
    await openWith(b);
    hub.shutdown();
    expect([a.ended, b.ended]).toEqual(["shutdown", "shutdown"]);
    expect(hub.boards).toBe(0);
    expect(hub.streams()).toEqual({});
    await expect(
      hub.open(BOARD, { keyId: "k", address: "a", scope: "boards:read" }, new TestViewer(), undefined),
    ).rejects.toBeInstanceOf(LiveShutdownError);
    expect(events.filter((e) => e === "disconnected shutdown").length).toBe(2);
  });
});
