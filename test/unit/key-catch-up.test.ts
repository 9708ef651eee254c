/**
 * The catch-up of unknown keys (keys/core/key-catch-up.ts) with a catch-up answered by hand: every key
 * arriving before a round starts shares it, one round runs at a time, one wait per key, a bounded
 * number of waiting keys, keys still unknown after a completed round are remembered (boundedly),
 * and a round that does not complete ends after its timeout without remembering anything.
 */
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/keys/core/api-key-secret.js";
import { KeyCatchUp } from "../../src/keys/core/key-catch-up.js";
import type { KeyLookup } from "../../src/keys/core/key-set.js";

const NOT_FOUND: KeyLookup = { found: false };

/** A catch-up whose rounds the test completes. */
function handCatchUp() {
  const rounds: { done: () => void; fail: () => void }[] = [];
  const catchUp = () =>
    new Promise<void>((resolve, reject) => {
      rounds.push({ done: resolve, fail: () => reject(new Error("down")) });
    });
  return { catchUp, rounds };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("KeyCatchUp", () => {
  it("makes a burst of 10,000 unknown keys share one round, and remembers them as unknown", async () => {
    const hand = handCatchUp();
    const catchUp = new KeyCatchUp({ catchUp: hand.catchUp, minGapMs: 0, maxWaiting: 20_000 });
    const keys = Array.from({ length: 10_000 }, () => generateApiKey().secret);
    const answers = keys.map((key) => catchUp.find(key, () => NOT_FOUND));
    await tick();
    expect(hand.rounds.length).toBe(1);
    hand.rounds[0]?.done();
    expect(await Promise.all(answers)).toEqual(keys.map(() => NOT_FOUND));
    expect(catchUp.find(keys[0] ?? "", () => NOT_FOUND)).toEqual(NOT_FOUND);
    await tick();
    expect(hand.rounds.length).toBe(1);
    expect(catchUp.stats).toEqual({ rounds: 1, waited: 10_000, rememberedUnknown: 1, overflow: 0 });
  });

  it("finds a key the round made known; keys arriving during a round wait for the next one", async () => {
    const hand = handCatchUp();
    const catchUp = new KeyCatchUp({ catchUp: hand.catchUp, minGapMs: 0 });
    const known = new Set<string>();
    const lookup = (key: string) => (): KeyLookup =>
      known.has(key) ? { found: true, caller: { keyId: key } as never } : NOT_FOUND;
    const [first, second] = [generateApiKey().secret, generateApiKey().secret];
    const one = catchUp.find(first, lookup(first));
    const sameKey = catchUp.find(first, lookup(first));
    expect(sameKey).toBe(one); // one wait per key
    await tick();
    const two = catchUp.find(second, lookup(second)); // arrives while round 1 runs
    known.add(second); // committed after round 1 started: only round 2 may be trusted with it
    hand.rounds[0]?.done();
    expect((await one).found).toBe(false);
    await tick();
    expect(hand.rounds.length).toBe(2);
    hand.rounds[1]?.done();
    expect((await two).found).toBe(true);
  });

  it("starts rounds at least minGapMs apart, one at a time", async () => {
    const hand = handCatchUp();
    const catchUp = new KeyCatchUp({ catchUp: hand.catchUp, minGapMs: 40 });
    void catchUp.find(generateApiKey().secret, () => NOT_FOUND);
    await tick();
    hand.rounds[0]?.done();
    const started = performance.now();
    void catchUp.find(generateApiKey().secret, () => NOT_FOUND);
    while (hand.rounds.length < 2) await tick();
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    hand.rounds[1]?.done();
  });

  it("refuses keys beyond maxWaiting at once, and forgets the oldest unknown key beyond maxUnknown", async () => {
    const hand = handCatchUp();
    const catchUp = new KeyCatchUp({ catchUp: hand.catchUp, minGapMs: 0, maxWaiting: 2, maxUnknown: 2 });
    const keys = Array.from({ length: 3 }, () => generateApiKey().secret);
    const waits = keys.map((key) => catchUp.find(key, () => NOT_FOUND));
    expect(waits[2]).toEqual(NOT_FOUND); // not a promise: refused without waiting
    await tick();
    hand.rounds[0]?.done();
    await Promise.all(waits);
    const third = catchUp.find(keys[2] ?? "", () => NOT_FOUND); // waits now, then is remembered
    await tick();
    hand.rounds[1]?.done();
    await third;
    // Remembered: keys[1] and keys[2]; keys[0] was forgotten (the oldest).
    expect(catchUp.find(keys[1] ?? "", () => NOT_FOUND)).toEqual(NOT_FOUND);
    expect(catchUp.find(keys[0] ?? "", () => NOT_FOUND)).toBeInstanceOf(Promise);
    expect(catchUp.stats.overflow).toBe(1);
    await tick();
    hand.rounds[2]?.done();
  });

  it("ends a round that cannot complete after timeoutMs, remembering nothing", async () => {
    const hand = handCatchUp();
    const catchUp = new KeyCatchUp({ catchUp: hand.catchUp, minGapMs: 0, timeoutMs: 30 });
    const key = generateApiKey().secret;
    expect(await catchUp.find(key, () => NOT_FOUND)).toEqual(NOT_FOUND);
    expect(catchUp.find(key, () => NOT_FOUND)).toBeInstanceOf(Promise); // not remembered: asked again
    await tick();
    hand.rounds[1]?.fail();
    hand.rounds[0]?.fail();
  });
});
