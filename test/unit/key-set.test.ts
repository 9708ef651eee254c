/**
 * The in-memory key set's rules, with a key store answered by hand (no
 * database): lookups by the key's hash, expiry, origins of usable publishable
 * keys only, changed keys read again (one read in flight; a key named again
 * during a read is read once more), a key whose change cannot be read for half
 * a second answers "unsettled", a whole load shares a running one and reads
 * again the keys changed meanwhile, and removals are announced.
 */
import { describe, expect, it, vi } from "vitest";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { type KeyRecord, KeySet, type KeyStore } from "../../src/keys/core/key-set.js";

interface Made {
  readonly secret: string;
  readonly record: KeyRecord;
}

function make(id: string, changes: Partial<KeyRecord> = {}): Made {
  const publishable = changes.publishable === true;
  const key = generateApiKey(publishable ? "publishable" : "secret");
  return {
    secret: key.secret,
    record: {
      id,
      affiliateId: 7,
      hash: key.hash,
      revokedAt: null,
      expiresAt: null,
      rateLimit: null,
      publishable,
      allowedOrigins: [],
      defaultRankBy: null,
      ...changes,
    },
  };
}

/** A store whose answers the test releases one by one. */
function handStore(rows: Map<string, KeyRecord>) {
  const calls: { kind: "usable" | "byIds"; ids?: readonly string[]; release: () => void; fail: () => void }[] = [];
  const store: KeyStore = {
    usable: () =>
      new Promise((resolve, reject) => {
        calls.push({
          kind: "usable",
          release: () => resolve([...rows.values()].filter((r) => r.revokedAt === null)),
          fail: () => reject(new Error("down")),
        });
      }),
    byIds: (ids) =>
      new Promise((resolve, reject) => {
        calls.push({
          kind: "byIds",
          ids,
          release: () => resolve(ids.flatMap((id) => (rows.has(id) ? [rows.get(id) as KeyRecord] : []))),
          fail: () => reject(new Error("down")),
        });
      }),
  };
  return { store, calls };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("the key set", () => {
  it("finds a key by its hash, with its caller, until it expires", async () => {
    let now = 1_000_000;
    const a = make("key_a", { rateLimit: { points: 5, windowSeconds: 60 }, expiresAt: 1_000 + 10 });
    const rows = new Map([[a.record.id, a.record]]);
    const { store, calls } = handStore(rows);
    const keys = new KeySet(store, { nowMs: () => now });
    expect(keys.loaded).toBe(false);
    const loading = keys.load();
    calls[0]?.release();
    await loading;
    expect(keys.loaded).toBe(true);
    expect(keys.lookup(a.secret)).toEqual({
      found: true,
      caller: expect.objectContaining({
        keyId: "key_a",
        affiliateId: 7,
        rateLimit: { points: 5, windowSeconds: 60 },
        kind: "secret",
        allowedOrigins: [],
        defaultRankBy: null,
      }),
    });
    expect(keys.lookup(make("key_x").secret)).toEqual({ found: false });
    now = 1_010_000; // the key's expiresAt (Unix seconds 1010)
    expect(keys.lookup(a.secret)).toEqual({ found: false });
  });

  it("allows an origin while some usable publishable key lists it", async () => {
    let now = 0;
    const pub = make("key_p", { publishable: true, allowedOrigins: ["https://a.example"], expiresAt: 100 });
    const { store, calls } = handStore(new Map([[pub.record.id, pub.record]]));
    const keys = new KeySet(store, { nowMs: () => now });
    const loading = keys.load();
    calls[0]?.release();
    await loading;
    expect([keys.allowsOrigin("https://a.example"), keys.allowsOrigin("https://b.example")]).toEqual([true, false]);
    expect(keys.counts()).toEqual({ secret: 0, publishable: 1 });
    now = 100_000;
    expect(keys.allowsOrigin("https://a.example")).toBe(false);
  });

  it("reads changed keys again, one read at a time, and a key named again during a read once more", async () => {
    const a = make("key_a");
    const rows = new Map([[a.record.id, a.record]]);
    const { store, calls } = handStore(rows);
    const keys = new KeySet(store);
    const removed: string[] = [];
    keys.onRemoved((id) => removed.push(id));
    const loading = keys.load();
    calls[0]?.release();
    await loading;

    rows.set("key_a", { ...a.record, rateLimit: { points: 1, windowSeconds: 1 } });
    keys.changed(["key_a"]);
    keys.changed(["key_a"]); // coalesced while the first read is in flight: named again
    expect(calls.map((c) => c.kind)).toEqual(["usable", "byIds"]);
    rows.set("key_a", { ...a.record, revokedAt: 5 });
    calls[1]?.release();
    await tick();
    // The first read applied the new limit; the key was named again meanwhile, so it is read once more.
    expect(calls.map((c) => [c.kind, c.ids])).toEqual([
      ["usable", undefined],
      ["byIds", ["key_a"]],
      ["byIds", ["key_a"]],
    ]);
    calls[2]?.release();
    await keys.settled();
    expect(keys.lookup(a.secret)).toEqual({ found: false });
    expect(removed).toEqual(["key_a"]);
  });

  it("answers unsettled for a changed key it cannot read again after half a second, and settles once it can", async () => {
    let now = 0;
    const a = make("key_a");
    const rows = new Map([[a.record.id, a.record]]);
    const { store, calls } = handStore(rows);
    const keys = new KeySet(store, { nowMs: () => now });
    const loading = keys.load();
    calls[0]?.release();
    await loading;
    keys.changed(["key_a"]);
    now = 400;
    expect(keys.lookup(a.secret).found).toBe(true); // within half a second: served as it was
    calls[1]?.fail();
    await tick();
    now = 600;
    expect(keys.lookup(a.secret)).toEqual({ found: false, unsettled: true });
    // The retry (after 200 ms) goes through.
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(calls.map((c) => c.kind)).toEqual(["usable", "byIds", "byIds"]);
    calls[2]?.release();
    await keys.settled();
    expect(keys.lookup(a.secret).found).toBe(true);
    keys.stop();
  });

  it("a whole load shares a running one, and reads again the keys changed while it ran", async () => {
    const a = make("key_a");
    const rows = new Map([[a.record.id, a.record]]);
    const { store, calls } = handStore(rows);
    const keys = new KeySet(store);
    const first = keys.load();
    const second = keys.load();
    expect(calls.map((c) => c.kind)).toEqual(["usable"]);
    keys.changed(["key_b"]); // a key created while the load's read runs
    rows.set("key_b", make("key_b").record);
    calls[0]?.release();
    await Promise.all([first, second]);
    calls[1]?.release(); // the change named during the load (already read as key_b's byIds)
    await tick();
    const again = calls.slice(1).map((c) => [c.kind, c.ids]);
    expect(again[0]).toEqual(["byIds", ["key_b"]]);
    for (const call of calls.slice(2)) call.release();
    await keys.settled();
    expect(keys.size).toBe(2);
  });

  it("announces a key dropped at its expiry, a revoked one, and a change of scopes, but not other changes", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const nowSeconds = Math.floor(Date.now() / 1000);
      const expiring = make("key_e", { expiresAt: nowSeconds + 2 });
      const b = make("key_b", { scopes: ["boards:read", "races:read"] });
      const c = make("key_c");
      const rows = new Map([expiring, b, c].map((m) => [m.record.id, m.record]));
      const { store, calls } = handStore(rows);
      const keys = new KeySet(store);
      const changes: [string, readonly string[] | undefined][] = [];
      const removed: string[] = [];
      keys.onChanged((id, scopes) => changes.push([id, scopes]));
      keys.onRemoved((id) => removed.push(id));
      const loading = keys.load();
      calls[0]?.release();
      await loading;

      rows.set("key_b", { ...b.record, rateLimit: { points: 1, windowSeconds: 1 } });
      await Promise.all([keys.refresh(["key_b"]), Promise.resolve().then(() => calls[1]?.release())]);
      expect(changes).toEqual([]);
      rows.set("key_b", { ...b.record, scopes: ["boards:read"] });
      await Promise.all([keys.refresh(["key_b"]), Promise.resolve().then(() => calls[2]?.release())]);
      expect(changes).toEqual([["key_b", ["boards:read"]]]);
      rows.set("key_c", { ...c.record, revokedAt: nowSeconds });
      await Promise.all([keys.refresh(["key_c"]), Promise.resolve().then(() => calls[3]?.release())]);
      expect(changes.slice(1)).toEqual([["key_c", undefined]]);

      // No reload runs: the key is dropped by its own timer, within a second of its expiry.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(keys.lookup(expiring.secret).found).toBe(true);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(changes.slice(2)).toEqual([["key_e", undefined]]);
      expect(removed).toEqual(["key_c", "key_e"]);
      expect([keys.lookup(expiring.secret).found, keys.size, calls.length]).toEqual([false, 1, 4]);
      keys.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
