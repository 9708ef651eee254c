/**
 * The in-memory reference model: every storage port (src/ports/) implemented with plain maps and
 * naive sums over the raw wagers, with no buckets, rollups or SQL. It is what the rules say and
 * nothing more, so it is easy to check by reading; the model-based test
 * (test/integration/model-based.test.ts) requires MariaDB's adapters to answer exactly as it does,
 * and the unit tier runs the Connect services on it (test/unit/services-on-model.test.ts).
 *
 * Money is BigInt: an amount in units of 10^-8, a weighted amount (amount × weight_bps / 10000) in
 * units of 10^-12, which is exact because amounts have at most 8 fraction digits. It lives in
 * test/support/ because only tests use it; src/ keeps only the ports it implements.
 */
import type { ApiKeyStore, KeyStore, NewStoredKey, StoredKeyWithHash } from "../../src/ports/api-keys.js";
import type { ChangeStore, DataChange } from "../../src/ports/changes.js";
import type { IngestStore, RecordOutcome, UserProfile, VoidOutcome, WagerRecord } from "../../src/ports/ingest.js";
import type { SchemaVersions } from "../../src/ports/schema.js";
import type { KeyedRow, RankedRow, StandingsStore } from "../../src/ports/standings.js";
import { scopesOfKind } from "../../src/values/scopes.js";
import type { RankBy } from "../../src/values/weights.js";

const FULL_WEIGHT = 10_000;

/** "12.5" → 1250000000n (units of 10^-8). Throws on anything but digits with an optional point. */
export function amountUnits(text: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,8}))?$/.exec(text);
  if (match === null) throw new Error(`not an amount: ${text}`);
  return BigInt(match[1] ?? "0") * 100_000_000n + BigInt((match[2] ?? "").padEnd(8, "0"));
}

/** Units of 10^-scale as the shortest decimal text: (1250000000n, 8) → "12.5", (0n, 12) → "0". */
export function unitsText(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`;
}

/** Code point order (UTF-8 byte order), as MariaDB orders VARBINARY and utf8mb4_bin ids. */
export function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

interface User {
  readonly key: number;
  readonly affiliate: number;
  readonly username: string;
  readonly avatar: string;
}

/** A wager as it counts: its user and affiliate when it was recorded. */
interface Wager {
  readonly userKey: number;
  readonly affiliate: number;
  readonly units: bigint;
  readonly placedAt: number;
  readonly weightBps: number;
}

/** A void: pending until its wager is recorded, then holding the wager it took out. */
type Void = { readonly applied: false } | { readonly applied: true; readonly wager: Wager };

interface ModelKey extends StoredKeyWithHash {}

export interface ReferenceModelOptions {
  /** Unix seconds: key creation and revocation times. */
  readonly now?: () => number;
}

export class ReferenceModel {
  private readonly affiliates = new Map<string, number>();
  private readonly users = new Map<string, User>();
  private readonly wagers = new Map<string, Wager>();
  private readonly voids = new Map<string, Void>();
  private readonly keys = new Map<string, ModelKey>();
  private readonly changes: DataChange[] = [];
  private lastChangeId = 0;
  private readonly now: () => number;

  constructor(options: ReferenceModelOptions = {}) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  /** The internal key of an affiliate (what a key's caller carries), or undefined when never seen. */
  affiliateKey(externalId: string): number | undefined {
    return this.affiliates.get(externalId);
  }

  private ensureAffiliate(externalId: string): number {
    let key = this.affiliates.get(externalId);
    if (key === undefined) {
      key = this.affiliates.size + 1;
      this.affiliates.set(externalId, key);
    }
    return key;
  }

  private noteChange(change: Omit<DataChange, "id">): void {
    this.lastChangeId += 1;
    this.changes.push({ id: this.lastChangeId, ...change });
  }

  // ---- IngestStore ----

  readonly ingest: IngestStore = {
    upsertUsers: async (profiles: readonly UserProfile[]) => {
      const latest = new Map<string, UserProfile>();
      for (const profile of profiles) latest.set(profile.id, profile);
      for (const profile of latest.values()) {
        const affiliate = this.ensureAffiliate(profile.affiliateId);
        const before = this.users.get(profile.id);
        const key = before?.key ?? this.users.size + 1;
        this.users.set(profile.id, { key, affiliate, username: profile.username, avatar: profile.avatar });
        if (
          before !== undefined &&
          (before.username !== profile.username || before.avatar !== profile.avatar || before.affiliate !== affiliate)
        ) {
          this.noteChange({ affiliateId: undefined, firstAt: 0, lastAt: 0, userExternalId: profile.id });
        }
      }
      return latest.size;
    },

    recordWagers: async (batch: readonly WagerRecord[]): Promise<RecordOutcome> => {
      // One id twice in the batch: the first stands for all, other content refuses the call.
      const first = new Map<string, WagerRecord>();
      const repeatedOtherwise = new Set<string>();
      for (const wager of batch) {
        const seen = first.get(wager.id);
        if (seen === undefined) first.set(wager.id, wager);
        else if (!this.sameSending(seen, wager)) repeatedOtherwise.add(wager.id);
      }
      if (repeatedOtherwise.size > 0) return { kind: "conflict", wagerIds: [...repeatedOtherwise] };
      const sorted = [...first.values()].sort((a, b) => byCodePoint(a.id, b.id));
      const unknown = [...new Set(sorted.map((w) => w.userId))].filter((id) => !this.users.has(id));
      if (unknown.length > 0) return { kind: "unknown_users", userIds: unknown };
      const changed = sorted.filter((w) => {
        const recorded = this.wagers.get(w.id);
        return recorded !== undefined && !sameWager(recorded, this.counted(w));
      });
      if (changed.length > 0) return { kind: "conflict", wagerIds: changed.map((w) => w.id) };
      const fresh = sorted.filter((w) => !this.wagers.has(w.id));
      // A wager voided after it was recorded, sent again: the same content is a duplicate, other content a conflict.
      const voidedOtherwise = fresh.filter((w) => {
        const v = this.voids.get(w.id);
        return v?.applied === true && !sameWager(v.wager, this.counted(w));
      });
      if (voidedOtherwise.length > 0) return { kind: "conflict", wagerIds: voidedOtherwise.map((w) => w.id) };
      let recorded = 0;
      const times: Wager[] = [];
      for (const w of fresh) {
        const v = this.voids.get(w.id);
        if (v?.applied === true) continue; // the same wager again: a duplicate
        recorded += 1;
        const wager = this.counted(w);
        if (v !== undefined)
          this.voids.set(w.id, { applied: true, wager }); // its void came first
        else {
          this.wagers.set(w.id, wager);
          times.push(wager);
        }
      }
      this.noteWagers(times);
      return { kind: "recorded", recorded, duplicates: batch.length - recorded };
    },

    voidWagers: async (wagerIds: readonly string[]): Promise<VoidOutcome> => {
      const ids = [...new Set(wagerIds)];
      let voided = 0;
      let alreadyVoided = 0;
      const times: Wager[] = [];
      for (const id of ids) {
        const wager = this.wagers.get(id);
        const before = this.voids.get(id);
        if (wager !== undefined) {
          voided += 1;
          this.wagers.delete(id);
          this.voids.set(id, { applied: true, wager });
          times.push(wager);
        } else if (before?.applied === true) alreadyVoided += 1;
        else this.voids.set(id, { applied: false });
      }
      this.noteWagers(times);
      return { voided, alreadyVoided, pending: ids.length - voided - alreadyVoided };
    },
  };

  /** A sending as it would count now (its user's current affiliate). The user must be known. */
  private counted(w: WagerRecord): Wager {
    const user = this.users.get(w.userId) as User;
    return {
      userKey: user.key,
      affiliate: user.affiliate,
      units: amountUnits(w.amount),
      placedAt: w.placedAt,
      weightBps: w.weightBps ?? FULL_WEIGHT,
    };
  }

  private sameSending(a: WagerRecord, b: WagerRecord): boolean {
    return (
      a.userId === b.userId &&
      a.placedAt === b.placedAt &&
      (a.weightBps ?? FULL_WEIGHT) === (b.weightBps ?? FULL_WEIGHT) &&
      amountUnits(a.amount) === amountUnits(b.amount)
    );
  }

  private noteWagers(wagers: readonly Wager[]): void {
    const spans = new Map<number, [number, number, Set<number>]>();
    for (const w of wagers) {
      const span = spans.get(w.affiliate);
      if (span === undefined) spans.set(w.affiliate, [w.placedAt, w.placedAt, new Set([w.userKey])]);
      else
        spans.set(w.affiliate, [Math.min(span[0], w.placedAt), Math.max(span[1], w.placedAt), span[2].add(w.userKey)]);
    }
    if (spans.size === 0) return;
    this.lastChangeId += 1;
    const id = this.lastChangeId;
    for (const [affiliateId, [firstAt, lastAt, users]] of spans) {
      const userIds = [...users].sort((a, b) => a - b);
      this.changes.push({ id, affiliateId, firstAt, lastAt, userIds, userExternalId: undefined });
    }
  }

  // ---- StandingsStore ----

  /** Every user with wagers of the affiliate in [start, end] (or only `only`), with both naive sums, in board order. */
  private board(affiliateId: number, start: number, end: number, rankBy: RankBy, only?: ReadonlySet<number>) {
    const sums = new Map<number, { plain: bigint; weighted: bigint }>();
    for (const w of this.wagers.values()) {
      if (w.affiliate !== affiliateId || w.placedAt < start || w.placedAt > end) continue;
      if (only !== undefined && !only.has(w.userKey)) continue;
      const sum = sums.get(w.userKey) ?? { plain: 0n, weighted: 0n };
      sum.plain += w.units;
      sum.weighted += w.units * BigInt(w.weightBps);
      sums.set(w.userKey, sum);
    }
    const byKey = new Map([...this.users].map(([externalId, user]) => [user.key, { externalId, user }]));
    return [...sums]
      .filter(([, sum]) => sum.plain > 0n)
      .map(([userKey, sum]) => {
        const { externalId, user } = byKey.get(userKey) as { externalId: string; user: User };
        return { externalId, user, rank: rankBy === "weighted" ? sum.weighted * 10_000n : sum.plain, sum };
      })
      .sort(
        (a, b) =>
          (a.rank > b.rank ? -1 : a.rank < b.rank ? 1 : 0) ||
          byCodePoint(a.user.username, b.user.username) ||
          byCodePoint(a.externalId, b.externalId),
      )
      .map(
        (row): KeyedRow => ({
          userKey: row.user.key,
          userExternalId: row.externalId,
          username: row.user.username,
          avatarUrl: row.user.avatar === "" ? null : row.user.avatar,
          total: unitsText(row.sum.plain, 8),
          weightedTotal: unitsText(row.sum.weighted, 12),
        }),
      );
  }

  /** Boards read through `keyed` (held boards kept current from the change feed), for tests that count them. */
  readonly keyedReads = { boards: 0, totals: 0, usersRead: 0, keys: 0 };

  readonly standings: StandingsStore = {
    topUsers: async (affiliateId: number, start: number, end: number, limit: number, rankBy: RankBy) =>
      this.board(affiliateId, start, end, rankBy)
        .slice(0, limit)
        .map(({ userKey: _key, ...row }): RankedRow => row),
    keyed: {
      boardWithKeys: async (affiliateId, start, end, limit, rankBy) => {
        this.keyedReads.boards += 1;
        return this.board(affiliateId, start, end, rankBy).slice(0, limit);
      },
      userKeys: async (externalIds) => {
        this.keyedReads.keys += 1;
        return new Map(
          externalIds.flatMap((id) => {
            const user = this.users.get(id);
            return user === undefined ? [] : [[id, user.key] as const];
          }),
        );
      },
      totalsOf: async (affiliateId, start, end, userKeys) => {
        this.keyedReads.totals += 1;
        this.keyedReads.usersRead += userKeys.length;
        return this.board(affiliateId, start, end, "wagered", new Set(userKeys));
      },
    },
  };

  // ---- ApiKeyStore and KeyStore ----

  readonly apiKeys: ApiKeyStore = {
    insert: async (key: NewStoredKey) => {
      const stored: ModelKey = {
        id: key.id,
        hash: key.hash,
        affiliateId: this.ensureAffiliate(key.affiliateExternalId),
        affiliateExternalId: key.affiliateExternalId,
        label: key.label,
        createdAt: this.now(),
        revokedAt: null,
        expiresAt: key.expiresAt ?? null,
        rateLimit: key.rateLimit,
        publishable: key.publishable === true,
        allowedOrigins: key.publishable === true ? [...(key.allowedOrigins ?? [])] : [],
        defaultRankBy: key.defaultRankBy ?? null,
        scopes: key.scopes ?? scopesOfKind(key.publishable === true),
      };
      this.keys.set(key.id, stored);
      this.noteKey(key.id);
      return withoutHash(stored);
    },
    findById: async (id) => {
      const key = this.keys.get(id);
      return key === undefined ? undefined : withoutHash(key);
    },
    list: async (affiliateExternalId) =>
      [...this.keys.values()]
        .filter((k) => affiliateExternalId === undefined || k.affiliateExternalId === affiliateExternalId)
        .sort((a, b) => a.createdAt - b.createdAt || byCodePoint(a.id, b.id))
        .map(withoutHash),
    revoke: async (id) => this.updateKey(id, (k) => ({ ...k, revokedAt: k.revokedAt ?? this.now() })),
    setRateLimit: async (id, rateLimit) => this.updateKey(id, (k) => ({ ...k, rateLimit })),
    setRankBy: async (id, defaultRankBy) => this.updateKey(id, (k) => ({ ...k, defaultRankBy })),
    rotate: async (oldId, fresh, oldExpiresAt) => {
      const old = this.keys.get(oldId);
      if (old === undefined) return undefined;
      const created: ModelKey = { ...old, id: fresh.id, hash: fresh.hash, createdAt: this.now() };
      const replaced: ModelKey = { ...old, expiresAt: Math.min(old.expiresAt ?? oldExpiresAt, oldExpiresAt) };
      this.keys.set(oldId, replaced);
      this.keys.set(fresh.id, created);
      this.noteKey(oldId);
      this.noteKey(fresh.id);
      return { old: withoutHash(replaced), created: withoutHash(created) };
    },
    affiliateHasUsers: async (affiliateExternalId) => {
      const affiliate = this.affiliates.get(affiliateExternalId);
      return [...this.users.values()].some((u) => u.affiliate === affiliate);
    },
  };

  readonly keyRecords: KeyStore = {
    usable: async (now) =>
      [...this.keys.values()].filter((k) => k.revokedAt === null && (k.expiresAt === null || k.expiresAt > now)),
    byIds: async (ids) => ids.flatMap((id) => this.keys.get(id) ?? []),
  };

  private updateKey(id: string, change: (key: ModelKey) => ModelKey): boolean {
    const key = this.keys.get(id);
    if (key === undefined) return false;
    this.keys.set(id, change(key));
    this.noteKey(id);
    return true;
  }

  private noteKey(apiKeyId: string): void {
    this.noteChange({ affiliateId: undefined, firstAt: 0, lastAt: 0, userExternalId: undefined, apiKeyId });
  }

  // ---- ChangeStore and SchemaVersions ----

  readonly changeRows: ChangeStore = {
    idStep: async () => 1,
    latestChangeId: async () => this.lastChangeId,
    changeIdsBetween: async (from, to) =>
      [...new Set(this.changes.map((c) => c.id))].filter((id) => id > from && id <= to),
    readChanges: async (afterId, missingIds, limit) => {
      const ids = [...new Set(this.changes.map((c) => c.id))]
        .filter((id) => id > afterId || missingIds.includes(id))
        .slice(0, limit);
      return { rows: ids.length, changes: this.changes.filter((c) => ids.includes(c.id)) };
    },
    prune: async () => 0,
  };

  /** The model holds no schema: always at the expected version. */
  readonly schema: SchemaVersions = { expected: 1, current: async () => 1 };
}

function sameWager(a: Wager, b: Wager): boolean {
  return a.userKey === b.userKey && a.units === b.units && a.placedAt === b.placedAt && a.weightBps === b.weightBps;
}

function withoutHash({ hash: _hash, ...key }: ModelKey) {
  return key;
}
