/**
 * The key rules of KeyAdmin (src/keys/core/key-admin.ts) on the reference model: what a new key, a
 * rotation, a rate limit and a default ranking may be, each refusal with its field and message, and
 * the events every change emits. Durations as operators write them. No database.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { KeyAdmin, type KeyEvent, parseDuration } from "../../src/keys/core/key-admin.js";
import { ReferenceModel } from "../support/reference-model.js";

const NOW = 1769904000; // 2026-02-01T00:00:00Z
const DAY = 86_400;

let admin: KeyAdmin;
let model: ReferenceModel;
let events: KeyEvent[];

beforeEach(() => {
  model = new ReferenceModel({ now: () => NOW });
  events = [];
  admin = new KeyAdmin(model.apiKeys, { now: () => NOW, onEvent: (event) => events.push(event) });
});

describe("a new key", () => {
  it("is refused with one violation per broken rule, in field order, and nothing is stored", async () => {
    const refused = await admin.create({
      affiliateId: "",
      label: "x".repeat(201),
      rateLimit: { points: 0, windowSeconds: DAY + 1 },
      expiresAt: NOW,
      allowedOrigins: ["https://a.example.test"],
    });
    expect(refused).toEqual({
      kind: "invalid",
      violations: [
        { field: "affiliateId", message: "affiliateId is required" },
        { field: "label", message: "label must be at most 200 characters" },
        { field: "rateLimit.points", message: "rateLimit.points must be 1 to 1000000000" },
        { field: "rateLimit.windowSeconds", message: "rateLimit.windowSeconds must be 1 to 86400" },
        { field: "expiresAt", message: "expiresAt must lie in the future (Unix seconds)" },
        {
          field: "allowedOrigins",
          message: "allowedOrigins are only for a publishable key (set publishable)",
        },
      ],
    });
    expect(await admin.list()).toEqual([]);
    expect(events).toEqual([]);
  });

  it("takes a label of 200 characters counted as code points, and refuses control characters", async () => {
    expect((await admin.create({ affiliateId: "aff", label: "\u{1F600}".repeat(200) })).kind).toBe("issued");
    expect(await admin.create({ affiliateId: "aff", label: "tab\there" })).toEqual({
      kind: "invalid",
      violations: [{ field: "label", message: "label must not contain control characters" }],
    });
  });

  it("refuses an expiry given in milliseconds (beyond 10 years) and takes one within", async () => {
    expect(await admin.create({ affiliateId: "aff", expiresAt: NOW * 1000 })).toEqual({
      kind: "invalid",
      violations: [
        { field: "expiresAt", message: "expiresAt must be within 10 years (Unix seconds, not milliseconds)" },
      ],
    });
    const issued = await admin.create({ affiliateId: "aff", expiresAt: NOW + 3650 * DAY });
    expect(issued.kind === "issued" && issued.key.expiresAt).toBe(NOW + 3650 * DAY);
  });

  it("takes no origins for an overlay-only publishable key, and keeps each origin once", async () => {
    const overlay = await admin.create({ affiliateId: "aff", publishable: true });
    expect(overlay.kind === "issued" && [overlay.key.publishable, overlay.key.allowedOrigins]).toEqual([true, []]);
    const issued = await admin.create({
      affiliateId: "aff",
      publishable: true,
      allowedOrigins: ["https://b.example.test", "https://b.example.test", "http://localhost:8080"],
    });
    if (issued.kind !== "issued") throw new Error("refused");
    expect(issued.secret).toMatch(/^tw_pub_[0-9A-Za-z]{38}$/);
    expect(issued.key.allowedOrigins).toEqual(["https://b.example.test", "http://localhost:8080"]);
  });

  it("says whether the affiliate has users yet, and emits created", async () => {
    const issued = await admin.create({ affiliateId: "aff-empty", label: "site", defaultRankBy: "weighted" });
    if (issued.kind !== "issued") throw new Error("refused");
    expect([issued.affiliateHasUsers, issued.key.defaultRankBy, issued.key.createdAt]).toEqual([
      false,
      "weighted",
      NOW,
    ]);
    expect(events).toEqual([{ action: "created", keyId: issued.key.id, affiliateId: "aff-empty" }]);
    await model.ingest.upsertUsers([{ id: "u", affiliateId: "aff-full", username: "u", avatar: "" }]);
    const second = await admin.create({ affiliateId: "aff-full" });
    expect(second.kind === "issued" && second.affiliateHasUsers).toBe(true);
  });
});

describe("changing a key", () => {
  it("rotates with an overlap of 0 to 30 days: the new key copies the old, the old expires, both events", async () => {
    const old = await admin.create({ affiliateId: "aff", label: "site", rateLimit: { points: 7, windowSeconds: 9 } });
    if (old.kind !== "issued") throw new Error("refused");
    expect(await admin.rotate(old.key.id, 30 * DAY + 1)).toEqual({
      kind: "invalid",
      violations: [{ field: "overlapSeconds", message: "overlapSeconds must be 0 to 2592000 (30 days)" }],
    });
    expect(await admin.rotate("key_missing", 60)).toEqual({ kind: "not_found", id: "key_missing" });
    events.length = 0;
    const rotated = await admin.rotate(old.key.id, 3600);
    if (rotated.kind !== "issued" || !("replaced" in rotated)) throw new Error("not rotated");
    expect([rotated.key.label, rotated.key.rateLimit, rotated.key.expiresAt]).toEqual([
      "site",
      { points: 7, windowSeconds: 9 },
      null,
    ]);
    expect(rotated.replaced.expiresAt).toBe(NOW + 3600);
    expect(events).toEqual([
      { action: "rotated", keyId: rotated.key.id, affiliateId: "aff", replacedKeyId: old.key.id },
      { action: "expiry_set", keyId: old.key.id, affiliateId: "aff", expiresAt: NOW + 3600 },
    ]);
  });

  it("revokes once (the first time stays), sets and clears a rate limit and a default ranking", async () => {
    const key = await admin.create({ affiliateId: "aff" });
    if (key.kind !== "issued") throw new Error("refused");
    const id = key.key.id;
    const revoked = await admin.revoke(id);
    expect(revoked.kind === "revoked" && revoked.key.revokedAt).toBe(NOW);
    expect(await admin.revoke("")).toEqual({
      kind: "invalid",
      violations: [{ field: "id", message: "id is required" }],
    });
    expect(await admin.setRateLimit(id, { points: 1_000_000_001, windowSeconds: 1 })).toEqual({
      kind: "invalid",
      violations: [{ field: "rateLimit.points", message: "rateLimit.points must be 1 to 1000000000" }],
    });
    const limited = await admin.setRateLimit(id, { points: 5, windowSeconds: 60 });
    expect(limited.kind === "updated" && limited.key.rateLimit).toEqual({ points: 5, windowSeconds: 60 });
    const cleared = await admin.setRateLimit(id, null);
    expect(cleared.kind === "updated" && cleared.key.rateLimit).toBe(null);
    const ranked = await admin.setRankBy(id, "weighted");
    expect(ranked.kind === "updated" && ranked.key.defaultRankBy).toBe("weighted");
    expect(await admin.setRankBy("key_missing", null)).toEqual({ kind: "not_found", id: "key_missing" });
    expect(events.map((e) => e.action)).toEqual([
      "created",
      "revoked",
      "rate_limit_set",
      "rate_limit_set",
      "rank_by_set",
    ]);
  });
});

describe("parseDuration", () => {
  it("reads a whole number with a unit s, m, h, d or w, and nothing else", () => {
    expect(["3600s", "90m", "12h", "90d", "2w", " 1d "].map(parseDuration)).toEqual([
      3600, 5400, 43_200, 7_776_000, 1_209_600, 86_400,
    ]);
    expect(["", "1", "1.5h", "-1d", "1y", "h", "1 d", "1234567890s"].map(parseDuration)).toEqual(
      Array(8).fill(undefined),
    );
  });
});
