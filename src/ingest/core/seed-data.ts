/**
 * Deterministic synthetic casino data for demos and benchmarks (`seed`): the same seed and options always give the
 * same data. Its shape, and why ids are numbered as they are: docs/architecture.md, "The seed data".
 */

import { DAY, EARLIEST_PERIOD_START as EARLIEST_START } from "../../values/calendar.js";
import type { UserProfile } from "../../values/records.js";

const UNITS_PER_DOLLAR = 100_000_000;
const MIN_UNITS = 1_000_000; // 0.01
const MAX_UNITS = 100_000_000_000_000; // 1,000,000

export interface SeedPlan {
  readonly seed: number;
  readonly affiliates: number;
  /** Total users; default: the research formula for this many affiliates. */
  readonly users?: number;
  readonly wagers: number;
  /** Length of the window in calendar months, ending at `end`. */
  readonly months: number;
  /** End of the window (exclusive), Unix seconds. */
  readonly end: number;
  /** Prepended to every generated id, so data sets with other prefixes never collide. */
  readonly prefix: string;
  /** The affiliate id of a size rank (1 = largest); default `${prefix}aff-${rank}`. */
  readonly affiliateId?: (rank: number) => string;
}

/** The wagers of one affiliate, in time order (parallel arrays). */
export interface AffiliateWagers {
  readonly rank: number;
  /** Number of the first wager (global, from 1); the i-th here is number first + i. */
  readonly first: number;
  readonly count: number;
  readonly userIndex: Uint32Array;
  readonly placedAt: Uint32Array;
  /** Amounts in 10^-8 units; integers (exact in a double below 2^53). */
  readonly units: Float64Array;
}

/** Small, fast, reproducible generator (mulberry32). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Independent stream seeds from one seed (a 32-bit integer hash). */
function streamSeed(seed: number, stream: number): number {
  let h = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(stream + 0x632be5ab, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

class Sampler {
  private readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  uniform(): number {
    return this.next();
  }
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }
  poisson(lambda: number): number {
    if (lambda <= 0) return 0;
    if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * this.normal()));
    const limit = Math.exp(-lambda);
    let k = 0;
    let p = this.next();
    while (p > limit) {
      k += 1;
      p *= this.next();
    }
    return k;
  }
}

/** Users per affiliate, largest first. */
export function affiliateSizes(affiliates: number, users?: number): number[] {
  const shape = Array.from({ length: affiliates }, (_, i) => 1 / (i + 1) ** 1.1);
  if (users === undefined) return shape.map((s) => Math.max(3, Math.round(100_000 * s)));
  if (users < affiliates) throw new RangeError("--users must be at least --affiliates (one user each)");
  const sum = shape.reduce((a, b) => a + b, 0);
  const sizes = shape.map((s) => Math.max(1, Math.floor((users * s) / sum)));
  // Rounding leaves a few users over or under: settle them on the largest affiliate.
  const first = sizes[0] ?? 0;
  sizes[0] = first + users - sizes.reduce((a, b) => a + b, 0);
  return sizes;
}

/**
 * Window start: `months` calendar months before `end`, but never before the earliest time ingest
 * accepts (EARLIEST_START), so every generated wager could also be sent through RecordWagers.
 */
export function windowStart(end: number, months: number): number {
  return Math.max(EARLIEST_START, monthsBefore(end, months));
}

function monthsBefore(end: number, months: number): number {
  const d = new Date(end * 1000);
  return (
    Date.UTC(
      d.getUTCFullYear(),
      d.getUTCMonth() - months,
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
    ) / 1000
  );
}

/** "12.34500000" from 1234500000 units: integer arithmetic only. */
export function amountText(units: number): string {
  const whole = Math.floor(units / UNITS_PER_DOLLAR);
  const fraction = units - whole * UNITS_PER_DOLLAR;
  return `${whole}.${String(fraction).padStart(8, "0")}`;
}

const ADJECTIVES = ["lucky", "wild", "swift", "golden", "silent", "brave", "crazy", "royal", "neon", "iron", "cosmic"];
const NOUNS = ["ace", "tiger", "falcon", "shark", "wolf", "dragon", "joker", "queen", "comet", "viper", "baron"];

export class SeedData {
  readonly start: number;
  readonly sizes: readonly number[];
  readonly userCount: number;
  /** Index of the first user of each affiliate (by rank - 1), plus the total at the end. */
  private readonly userOffsets: Uint32Array;
  /** Index of each user's first session, plus the total at the end. */
  private readonly sessionOffsets: Uint32Array;
  private readonly sessionStart: Uint32Array;
  private readonly sessionLength: Uint32Array;
  private readonly sessionWagers: Uint32Array;
  private readonly betMedian: Float64Array;
  /** Wagers before each affiliate's first (by rank - 1). */
  private readonly wagerOffsets: Float64Array;

  constructor(readonly plan: SeedPlan) {
    if (plan.affiliates < 1) throw new RangeError("--affiliates must be at least 1");
    if (plan.wagers < 0) throw new RangeError("--wagers must not be negative");
    if (plan.end <= EARLIEST_START) throw new RangeError(`--end must be after ${EARLIEST_START} (2 December 2024)`);
    this.start = windowStart(plan.end, plan.months);
    this.sizes = affiliateSizes(plan.affiliates, plan.users);
    this.userCount = this.sizes.reduce((a, b) => a + b, 0);
    this.userOffsets = new Uint32Array(plan.affiliates + 1);
    for (let r = 0; r < plan.affiliates; r++) {
      this.userOffsets[r + 1] = (this.userOffsets[r] ?? 0) + (this.sizes[r] ?? 0);
    }
    const users = drawUsers(plan, this.start, this.userCount);
    this.betMedian = users.betMedian;
    this.sessionOffsets = users.sessionOffsets;
    this.sessionStart = Uint32Array.from(users.starts);
    this.sessionLength = Uint32Array.from(users.lengths);
    this.sessionWagers = spreadWagers(users, plan.wagers);
    this.wagerOffsets = affiliateWagerOffsets(this.userOffsets, this.sessionOffsets, this.sessionWagers);
  }

  affiliateId(rank: number): string {
    return this.plan.affiliateId?.(rank) ?? `${this.plan.prefix}aff-${rank}`;
  }

  userId(index: number): string {
    return `${this.plan.prefix}u${String(index + 1).padStart(7, "0")}`;
  }

  wagerId(number: number): string {
    return `${this.plan.prefix}w${String(number).padStart(10, "0")}`;
  }

  /** Weight in basis points of wager number `number`: 10000 (70 %), 5000 (20 %) or 1000 (10 %). */
  weightBps(number: number): number {
    let h = Math.imul(this.plan.seed ^ 0x27d4eb2f, 0x165667b1) ^ Math.imul(number, 0x9e3779b1);
    h ^= h >>> 15;
    h = Math.imul(h, 0x85ebca77);
    h ^= h >>> 13;
    const share = (h >>> 0) % 100;
    return share < 70 ? 10_000 : share < 90 ? 5_000 : 1_000;
  }

  /** Rank (1 = largest) of the affiliate a user belongs to. */
  rankOfUser(index: number): number {
    let lo = 0;
    let hi = this.plan.affiliates - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.userOffsets[mid] ?? 0) <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** Users of an affiliate: index range [from, to). */
  usersOf(rank: number): { from: number; to: number } {
    return { from: this.userOffsets[rank - 1] ?? 0, to: this.userOffsets[rank] ?? 0 };
  }

  user(index: number): UserProfile {
    const pick = mulberry32(streamSeed(this.plan.seed, 0x10000000 + index));
    const name = `${ADJECTIVES[Math.floor(pick() * ADJECTIVES.length)]}_${NOUNS[Math.floor(pick() * NOUNS.length)]}${Math.floor(pick() * 10_000)}`;
    const avatar = pick() < 0.3 ? "" : `https://avatars.example.com/${this.userId(index)}.png`;
    return { id: this.userId(index), affiliateId: this.affiliateId(this.rankOfUser(index)), username: name, avatar };
  }

  /** Number of wagers of an affiliate. */
  wagerCount(rank: number): number {
    return (this.wagerOffsets[rank] ?? 0) - (this.wagerOffsets[rank - 1] ?? 0);
  }

  /** The wagers of one affiliate, generated from its own random stream, in time order. */
  wagersOf(rank: number): AffiliateWagers {
    const count = this.wagerCount(rank);
    const random = new Sampler(streamSeed(this.plan.seed, 0x20000000 + rank));
    const userIndex = new Uint32Array(count);
    const placedAt = new Uint32Array(count);
    const units = new Float64Array(count);
    const { from, to } = this.usersOf(rank);
    let i = 0;
    for (let u = from; u < to; u++) {
      const median = this.betMedian[u] ?? 3;
      for (let s = this.sessionOffsets[u] ?? 0; s < (this.sessionOffsets[u + 1] ?? 0); s++) {
        const start = this.sessionStart[s] ?? 0;
        const length = this.sessionLength[s] ?? 60;
        for (let n = this.sessionWagers[s] ?? 0; n > 0; n--) {
          userIndex[i] = u;
          placedAt[i] = Math.min(this.plan.end - 1, start + Math.floor(random.uniform() * length));
          const dollars = median * random.logNormal(1, 0.9);
          units[i] = Math.min(MAX_UNITS, Math.max(MIN_UNITS, Math.round(dollars * UNITS_PER_DOLLAR)));
          i += 1;
        }
      }
    }
    const order = timeOrder(placedAt);
    return {
      rank,
      first: (this.wagerOffsets[rank - 1] ?? 0) + 1,
      count,
      userIndex: permute(userIndex, order, new Uint32Array(count)),
      placedAt: permute(placedAt, order, new Uint32Array(count)),
      units: permute(units, order, new Float64Array(count)),
    };
  }
}

function permute<T extends Uint32Array | Float64Array>(values: T, order: Uint32Array, out: T): T {
  for (let i = 0; i < order.length; i++) out[i] = values[order[i] ?? 0] ?? 0;
  return out;
}

/** Indices that sort `keys` ascending, ties in index order (stable). */
function timeOrder(keys: Uint32Array): Uint32Array {
  const n = keys.length;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  if (n < 65_536) return order.sort((a, b) => (keys[a] ?? 0) - (keys[b] ?? 0) || a - b);
  // Two stable counting passes over 16-bit digits (LSD radix sort).
  let from = order;
  let to = new Uint32Array(n);
  for (const shift of [0, 16]) {
    const counts = new Uint32Array(65_537);
    for (let i = 0; i < n; i++) {
      const slot = (((keys[from[i] ?? 0] ?? 0) >>> shift) & 0xffff) + 1;
      counts[slot] = (counts[slot] ?? 0) + 1;
    }
    for (let d = 0; d < 65_536; d++) counts[d + 1] = (counts[d + 1] ?? 0) + (counts[d] ?? 0);
    for (let i = 0; i < n; i++) {
      const index = from[i] ?? 0;
      const digit = ((keys[index] ?? 0) >>> shift) & 0xffff;
      to[counts[digit] ?? 0] = index;
      counts[digit] = (counts[digit] ?? 0) + 1;
    }
    [from, to] = [to, from];
  }
  return from;
}

/** The users as drawn: each one's bet size and session size, and their sessions (start, length) in user order. */
interface DrawnUsers {
  readonly betMedian: Float64Array;
  readonly sizeFactor: Float64Array;
  /** Index of each user's first session, plus the total at the end. */
  readonly sessionOffsets: Uint32Array;
  readonly starts: number[];
  readonly lengths: number[];
}

/**
 * Draws every user from the users' stream of the seed: a signup, a lifetime, a rate of play, a session size
 * and a bet size, then sessions at that rate within the window.
 */
function drawUsers(plan: SeedPlan, start: number, userCount: number): DrawnUsers {
  const users = new Sampler(streamSeed(plan.seed, 1));
  const span = plan.end - start;
  const betMedian = new Float64Array(userCount);
  const sizeFactor = new Float64Array(userCount);
  const sessionOffsets = new Uint32Array(userCount + 1);
  const starts: number[] = [];
  const lengths: number[] = [];
  for (let u = 0; u < userCount; u++) {
    const signup = start - 90 * DAY + users.uniform() * (span + 90 * DAY);
    const lifetime = users.exponential(120 * DAY);
    const from = Math.max(signup, start);
    const to = Math.min(signup + lifetime, plan.end);
    const rate = users.logNormal(0.05, 1);
    sizeFactor[u] = users.logNormal(1, 1);
    betMedian[u] = users.logNormal(3, 1.2);
    const sessions = to > from ? users.poisson((rate * (to - from)) / DAY) : 0;
    for (let s = 0; s < sessions; s++) {
      starts.push(Math.floor(from + users.uniform() * (to - from)));
      lengths.push(Math.round(60 + users.exponential(1800)));
    }
    sessionOffsets[u + 1] = starts.length;
  }
  if (starts.length === 0 && plan.wagers > 0) {
    // Too few users to have played by chance: give each one session so the wagers have somewhere to go.
    for (let u = 0; u < userCount; u++) {
      starts.push(Math.floor(start + users.uniform() * span));
      lengths.push(Math.round(60 + users.exponential(1800)));
      sessionOffsets[u + 1] = starts.length;
    }
  }
  return { betMedian, sizeFactor, sessionOffsets, starts, lengths };
}

/** Exactly `wagers` wagers, spread over the sessions in proportion to their user's session size. */
function spreadWagers(users: DrawnUsers, wagers: number): Uint32Array {
  const { sessionOffsets, sizeFactor } = users;
  const userCount = sizeFactor.length;
  const sessionWagers = new Uint32Array(users.starts.length);
  let totalWeight = 0;
  for (let u = 0; u < userCount; u++) {
    totalWeight += ((sessionOffsets[u + 1] ?? 0) - (sessionOffsets[u] ?? 0)) * (sizeFactor[u] ?? 0);
  }
  let cumulative = 0;
  let given = 0;
  for (let u = 0; u < userCount; u++) {
    for (let s = sessionOffsets[u] ?? 0; s < (sessionOffsets[u + 1] ?? 0); s++) {
      cumulative += sizeFactor[u] ?? 0;
      const upTo = s === users.starts.length - 1 ? wagers : Math.floor((cumulative / totalWeight) * wagers);
      const n = Math.max(0, Math.min(wagers, upTo) - given);
      sessionWagers[s] = n;
      given += n;
    }
  }
  return sessionWagers;
}

/** Wagers before each affiliate's first (by rank - 1), plus the total at the end. */
function affiliateWagerOffsets(
  userOffsets: Uint32Array,
  sessionOffsets: Uint32Array,
  sessionWagers: Uint32Array,
): Float64Array {
  const affiliates = userOffsets.length - 1;
  const offsets = new Float64Array(affiliates + 1);
  for (let r = 0; r < affiliates; r++) {
    let n = 0;
    const sessionsFrom = sessionOffsets[userOffsets[r] ?? 0] ?? 0;
    const sessionsTo = sessionOffsets[userOffsets[r + 1] ?? 0] ?? 0;
    for (let s = sessionsFrom; s < sessionsTo; s++) n += sessionWagers[s] ?? 0;
    offsets[r + 1] = (offsets[r] ?? 0) + n;
  }
  return offsets;
}
