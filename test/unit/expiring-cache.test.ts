import { describe, expect, it } from "vitest";
import { ExpiringCache, SingleFlight } from "../../src/values/expiring-cache.js";

interface Entry {
  readonly name: string;
  readonly expiresAt: number;
}

describe("ExpiringCache", () => {
  it("answers an entry until its expiry, and keeps it readable as the last known after", () => {
    let now = 1_000;
    const cache = new ExpiringCache<Entry>({ maxEntries: 10, now: () => now });
    cache.set("a", { name: "a", expiresAt: 1_500 });
    expect(cache.fresh("a")).toEqual({ name: "a", expiresAt: 1_500 });
    now = 1_499;
    expect(cache.fresh("a")?.name).toBe("a");
    now = 1_500;
    expect(cache.fresh("a")).toBeUndefined();
    expect(cache.last("a")).toEqual({ name: "a", expiresAt: 1_500 });
    expect(cache.fresh("missing")).toBeUndefined();
    expect(cache.last("missing")).toBeUndefined();
  });

  it("drops the entry stored longest ago beyond the bound; storing a key again makes it the newest", () => {
    const cache = new ExpiringCache<Entry>({ maxEntries: 2, now: () => 0 });
    cache.set("a", { name: "a", expiresAt: 10 });
    cache.set("b", { name: "b", expiresAt: 10 });
    cache.set("a", { name: "a2", expiresAt: 10 });
    expect(cache.size).toBe(2);
    cache.set("c", { name: "c", expiresAt: 10 });
    expect([cache.last("a")?.name, cache.last("b")?.name, cache.last("c")?.name]).toEqual(["a2", undefined, "c"]);
  });

  it("without refreshOnRead a read does not change the order; with it the least recently used goes first", () => {
    for (const refreshOnRead of [false, true]) {
      const cache = new ExpiringCache<Entry>({ maxEntries: 2, now: () => 0, refreshOnRead });
      cache.set("a", { name: "a", expiresAt: 10 });
      cache.set("b", { name: "b", expiresAt: 10 });
      cache.fresh("a");
      cache.set("c", { name: "c", expiresAt: 10 });
      expect([refreshOnRead, cache.last("a")?.name, cache.last("b")?.name]).toEqual(
        refreshOnRead ? [true, "a", undefined] : [false, undefined, "b"],
      );
    }
  });

  it("keeps least-recently-used order through repeated reads, deletions and re-stores of the newest key", () => {
    const cache = new ExpiringCache<Entry>({ maxEntries: 3, now: () => 0, refreshOnRead: true });
    const store = (name: string) => cache.set(name, { name, expiresAt: 10 });
    const kept = () => ["a", "b", "c", "d", "e"].filter((name) => cache.last(name) !== undefined);
    store("a");
    store("b");
    store("c");
    cache.fresh("c"); // already the newest
    cache.fresh("c");
    cache.fresh("a"); // order now b, c, a
    cache.fresh("a");
    store("d"); // drops b
    expect(kept()).toEqual(["a", "c", "d"]);
    cache.deleteWhere((key) => key === "d"); // the newest goes: c, a
    cache.fresh("c"); // a, c
    store("e"); // a, c, e
    store("b"); // drops a
    expect(kept()).toEqual(["b", "c", "e"]);
    store("d"); // drops c
    expect(kept()).toEqual(["b", "d", "e"]);
  });

  it("deleteWhere drops the matching entries and counts them", () => {
    const cache = new ExpiringCache<Entry>({ maxEntries: 10, now: () => 0 });
    for (const name of ["a1", "b1", "a2"]) cache.set(name, { name, expiresAt: 10 });
    expect(cache.deleteWhere((key) => key.startsWith("a"))).toBe(2);
    expect(cache.size).toBe(1);
    expect(cache.last("b1")?.name).toBe("b1");
  });
});

describe("SingleFlight", () => {
  it("shares one running load per key and starts a new one once it settled", async () => {
    const flights = new SingleFlight<number>();
    let loads = 0;
    let finish: (value: number) => void = () => undefined;
    const load = () => {
      loads += 1;
      return new Promise<number>((resolve) => {
        finish = resolve;
      });
    };
    const first = flights.run("k", load);
    const second = flights.run("k", load);
    expect(second).toBe(first);
    expect(flights.current("k")).toBe(first);
    finish(7);
    expect(await Promise.all([first, second])).toEqual([7, 7]);
    expect(flights.current("k")).toBeUndefined();
    const third = flights.run("k", load);
    expect(loads).toBe(2);
    finish(8);
    expect(await third).toBe(8);
  });

  it("a failed load is shared by its waiters and not kept", async () => {
    const flights = new SingleFlight<number>();
    const failing = flights.run("k", () => Promise.reject(new Error("down")));
    await expect(flights.run("k", () => Promise.resolve(1))).rejects.toThrow("down");
    await expect(failing).rejects.toThrow("down");
    expect(await flights.run("k", () => Promise.resolve(2))).toBe(2);
  });

  it("forget lets go of a running load: it still answers, the next run starts anew", async () => {
    const flights = new SingleFlight<string>();
    let finish: (value: string) => void = () => undefined;
    const old = flights.run("k", () => new Promise<string>((resolve) => (finish = resolve)));
    flights.forget((key) => key === "k");
    expect(flights.current("k")).toBeUndefined();
    const fresh = flights.run("k", () => Promise.resolve("new"));
    finish("old");
    expect(await old).toBe("old");
    expect(await fresh).toBe("new");
  });
});
