/**
 * Model-based test: random sequences of ingest calls and queries run through the services twice,
 * once on the MariaDB adapters (rollups, raw edges, voids, SQL) and once on the in-memory reference
 * model (test/support/reference-model.ts: plain maps and BigInt sums), and every answer must be
 * identical: outcomes of UpsertUsers, RecordWagers and VoidWagers, and the ranked boards with their
 * exact decimal strings, order and tie-break, plain and weighted.
 *
 * Each sequence uses its own ids (a prefix per run) on one throwaway database, so no state leaks
 * between sequences and nothing needs to be emptied. Ids, names, amounts and times are drawn from
 * small pools so that sequences hit duplicates, conflicts, voids before and after their wager, moves
 * between affiliates, ties, and wagers on the seconds around month, half-month, day and hour edges.
 */
import fc from "fast-check";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import type { StandingsStore } from "../../src/ports/standings.js";
import { placeFromBoard } from "../../src/races/core/races.js";
import type { RankBy } from "../../src/values/weights.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import * as draw from "../support/model-draws.js";
import { referencePlacement } from "../support/race-reference.js";
import { ReferenceModel } from "../support/reference-model.js";

const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h) / 1000;
/** The services' clock: noon on 1 March 2026; every wager lies before it. */
const NOW = utc(2026, 3, 1, 12);
const DEFAULT_AVATAR = "https://cdn.example.test/default.png";

/** Edges of the rollups around the data: months, half-months, days and hours. */
const EDGES = [
  utc(2025, 12, 16),
  utc(2026, 1, 1),
  utc(2026, 1, 16),
  utc(2026, 1, 20),
  utc(2026, 1, 31, 23),
  utc(2026, 2, 1),
  utc(2026, 2, 16),
  utc(2026, 2, 28, 13),
  utc(2026, 3, 1),
];
const DATA_FROM = utc(2025, 12, 10);

const edge = fc.constantFrom(...EDGES);
/** A time near an edge (a second or an hour either side), or anywhere in the data window. */
const time = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(edge, fc.constantFrom(-3600, -2, -1, 0, 1, 2, 3599, 3600)).map(([e, d]) => e + d) },
  { weight: 1, arbitrary: fc.integer({ min: DATA_FROM, max: NOW }) },
);

/** Inclusive periods: whole months and half-months, misaligned ones, one second, spans across edges. */
const period = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      [utc(2026, 1, 1), utc(2026, 2, 1) - 1],
      [utc(2026, 2, 1), utc(2026, 3, 1) - 1],
      [utc(2026, 1, 1), utc(2026, 1, 16) - 1],
      [utc(2026, 1, 16), utc(2026, 2, 1) - 1],
      [utc(2026, 2, 16), utc(2026, 3, 1) - 1],
      [utc(2025, 12, 16), utc(2026, 3, 1) - 1],
      [utc(2025, 12, 1), utc(2027, 1, 1)],
    ),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(time, fc.integer({ min: 0, max: 80 * 86_400 }))
      .map(([start, length]) => [start, start + length]),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(edge, edge, fc.integer({ min: -2, max: 2 }), fc.integer({ min: -2, max: 2 }))
      .map(([a, b, da, db]) => {
        const [from, to] = a <= b ? [a, b] : [b, a];
        return [from + da, Math.max(from + da, to - 1 + db)];
      }),
  },
  { weight: 1, arbitrary: time.map((t) => [t, t]) },
);

const amount = fc.oneof(
  fc.constantFrom("1", "2", "0.5", "1.5", "0.00000001", "3", "100", "999999999999.99999999"),
  fc
    .tuple(fc.bigInt({ min: 0n, max: 10n ** 6n }), fc.bigInt({ min: 0n, max: 10n ** 8n - 1n }))
    .map(([whole, fraction]) => `${whole}.${fraction.toString().padStart(8, "0")}`.replace(/\.?0+$/, ""))
    .filter((text) => text !== "0" && text !== ""),
);
const weight = fc.option(fc.oneof(fc.constantFrom(0, 1, 5000, 9999, 10_000), fc.integer({ min: 0, max: 10_000 })), {
  nil: undefined,
});

const POOLS: draw.DrawPools = {
  users: 6,
  affiliates: 3,
  /** Ids of randomly drawn wagers: 0 to wagers - 1; of the fixed re-sent ones: wagers to wagers + RESENT - 1. */
  wagers: 30,
  /** Names that tie, differ only in case, sort differently by code unit and code point, and are not ASCII. */
  names: ["amy", "amy", "Amy", "bob", "émile", "\u{1F600}", "\uFF5Ezed", "z"],
  avatars: ["", "https://img.example.test/a.png", "http://img.example.test/b.png"],
  amount,
  time,
  weight,
};
const RESENT = 8;

interface Side {
  readonly ingest: WagerIngest;
  readonly board: Leaderboard;
  readonly standings: StandingsStore;
  affiliateKey(externalId: string): Promise<number | undefined>;
}

/** One sequence: the same calls on both sides. */
interface Pair {
  readonly prefix: string;
  readonly model: Side;
  readonly real: Side;
}

const ids = (pair: Pair) => draw.sequenceIds(pair.prefix);

type Command = fc.AsyncCommand<object, Pair>;

class UpsertUsers extends draw.DrawnCommand<readonly draw.DrawnUser[], Pair> {
  async run(_: object, pair: Pair) {
    const profiles = draw.profilesOf(this.drawn, POOLS, pair.prefix);
    const [real, model] = await Promise.all([
      pair.real.ingest.upsertUsers(profiles),
      pair.model.ingest.upsertUsers(profiles),
    ]);
    expect(real).toEqual(model);
  }
}

class RecordWagers extends draw.DrawnCommand<readonly draw.DrawnWager[], Pair> {
  async run(_: object, pair: Pair) {
    const wagers = draw.wagersOf(this.drawn, pair.prefix);
    const real = await pair.real.ingest.recordWagers(wagers);
    const model = await pair.model.ingest.recordWagers(wagers);
    expect(real).toEqual(model);
    tally(`record:${real.kind}`);
    if (real.kind === "recorded" && real.duplicates > 0) tally("record:duplicates");
  }
}

class VoidWagers extends draw.DrawnCommand<readonly number[], Pair> {
  async run(_: object, pair: Pair) {
    const id = ids(pair);
    const wagerIds = this.drawn.map(id.wager);
    const real = await pair.real.ingest.voidWagers(wagerIds);
    const model = await pair.model.ingest.voidWagers(wagerIds);
    expect(real).toEqual(model);
    if (real.kind === "voided") {
      if (real.voided > 0) tally("void:after");
      if (real.pending > 0) tally("void:before");
      if (real.alreadyVoided > 0) tally("void:again");
    } else tally(`void:${real.kind}`);
  }
}

class Query implements Command {
  constructor(
    readonly affiliate: number,
    readonly period: readonly number[],
    readonly numUsers: number,
    readonly rankBy: RankBy | undefined,
  ) {}
  check = () => true;
  async run(_: object, pair: Pair) {
    const affiliate = ids(pair).affiliate(this.affiliate);
    const [realKey, modelKey] = [await pair.real.affiliateKey(affiliate), await pair.model.affiliateKey(affiliate)];
    expect(realKey === undefined).toBe(modelKey === undefined);
    if (realKey === undefined || modelKey === undefined) return;
    const [start, end] = this.period as [number, number];
    const query = {
      start,
      end,
      numUsers: this.numUsers,
      ...(this.rankBy === undefined ? {} : { rankBy: this.rankBy }),
    };
    const real = await pair.real.board.topWagersForPeriod(realKey, query);
    const model = await pair.model.board.topWagersForPeriod(modelKey, query);
    expect(real.ranked).toEqual(model.ranked);
    tally(real.ranked.length > 0 ? `query:${this.rankBy ?? "default"}` : "query:empty");
  }
  toString = () => `Query(${this.affiliate}, [${this.period.join(", ")}], ${this.numUsers}, ${this.rankBy})`;
}

/**
 * A race's standings and prizes: placed through src/races (the need-more loop over the MariaDB
 * board) and by the reference placement over the reference model's whole board, which share no code.
 */
class RacePlacement implements Command {
  constructor(
    readonly affiliate: number,
    readonly period: readonly number[],
    readonly prizes: readonly string[],
    readonly minWagered: string,
    readonly excluded: readonly number[],
    readonly shown: number,
    readonly rankBy: RankBy,
  ) {}
  check = () => true;
  async run(_: object, pair: Pair) {
    const id = ids(pair);
    const affiliate = id.affiliate(this.affiliate);
    const [realKey, modelKey] = [await pair.real.affiliateKey(affiliate), await pair.model.affiliateKey(affiliate)];
    if (realKey === undefined || modelKey === undefined) return;
    const [start, end] = this.period as [number, number];
    const rules = {
      prizes: this.prizes,
      minWagered: this.minWagered,
      excludedUserIds: this.excluded.map(id.user),
      shown: this.shown,
      rankBy: this.rankBy,
    };
    const real = await placeFromBoard(pair.real.standings, realKey, start, end, rules);
    const board = await pair.model.standings.topUsers(modelKey, start, end, 1_000_000, this.rankBy);
    const model = referencePlacement(board, rules);
    expect({
      entries: real.entries.map((e) => [e.rank, e.row.userExternalId, e.prize]),
      unallocated: real.unallocated,
    }).toEqual(model);
    if (real.entries.some((e, i) => real.entries.findIndex((f) => f.rank === e.rank) !== i)) tally("race:tie");
    tally(real.entries.length > 0 ? "race:placed" : "race:empty");
  }
  toString = () =>
    `RacePlacement(${this.affiliate}, [${this.period.join(", ")}], ${JSON.stringify(this.prizes)}, ${this.minWagered}, ${JSON.stringify(this.excluded)}, ${this.shown}, ${this.rankBy})`;
}

/** Renames and moves between affiliates (every user of a sequence is known from its start). */
const upsertUsers = draw.users(POOLS, 3).map((users) => new UpsertUsers(users));

/** New wagers, conflicts (an id again with other content, weight included) and repeats inside a batch. */
const recordWagers = draw.wagers(POOLS, 5).map((wagers) => new RecordWagers(wagers));

/**
 * One fixed content per wager id (user, time), sent again and again: the same amount written two
 * ways and no weight or 10000 are duplicates; weight 5000 against 0 or 10000 is a conflict.
 */
const resend = fc
  .array(
    fc.record({
      wager: fc.integer({ min: POOLS.wagers, max: POOLS.wagers + RESENT - 1 }),
      amount: fc.constantFrom("1.5", "1.50000000"),
      weightBps: fc.constantFrom(5000, 5000, 0, 10_000, undefined),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map(
    (ws) =>
      new RecordWagers(
        ws.map(({ wager, amount, weightBps }) => ({
          wager,
          user: wager % POOLS.users,
          amount,
          placedAt: EDGES[wager % EDGES.length] as number,
          weightBps,
        })),
      ),
  );

/** Voids of recorded wagers, of wagers not recorded yet, and again. */
const voidWagers = fc
  .array(fc.nat(POOLS.wagers + RESENT - 1), { minLength: 1, maxLength: 3 })
  .map((ws) => new VoidWagers(ws));

const query = fc
  .tuple(
    fc.nat(POOLS.affiliates - 1),
    period,
    fc.oneof(fc.integer({ min: 1, max: 4 }), fc.constant(100)),
    fc.constantFrom<RankBy | undefined>(undefined, "wagered", "weighted", "weighted"),
  )
  .map(([a, p, n, r]) => new Query(a, p, n, r));

/** Prize tables of mixed scales: splits that round, ranks without a prize, none at all. */
const prizeTable = fc.oneof(
  fc.constantFrom<string[]>([], ["10"], ["100.00", "50.00", "30.00"], ["1", "1", "1", "0.5"], ["0.01", "0.02"]),
  fc.array(fc.constantFrom("0", "1", "2.5", "3.333", "100", "0.00000001"), { maxLength: 6 }),
);
const racePlacement = fc
  .tuple(
    fc.nat(POOLS.affiliates - 1),
    period,
    prizeTable,
    fc.constantFrom("0", "0", "1", "1.5", "100"),
    fc.array(fc.nat(POOLS.users - 1), { maxLength: 3 }),
    fc.integer({ min: 1, max: 5 }),
    fc.constantFrom<RankBy>("wagered", "weighted"),
  )
  .map(([a, p, prizes, min, excluded, shown, rankBy]) => new RacePlacement(a, p, prizes, min, excluded, shown, rankBy));

/** Drawn uniformly from this list: writes twice as often as their kind alone would be. */
const commands = [upsertUsers, recordWagers, recordWagers, resend, voidWagers, query, query, query, racePlacement];

let database: TestDatabase;
let run = 0;
/** How often each kind of outcome came up (printed, and a floor checked at the end). */
const seen = new Map<string, number>();
const tally = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

beforeAll(async () => {
  database = await createTestDatabase("model_based");
});

afterAll(async () => {
  await database?.drop();
});

async function pairOf(): Promise<Pair> {
  run += 1;
  const db = database.db;
  const model = new ReferenceModel({ now: () => NOW });
  const board = (standings: StandingsStore) =>
    new Leaderboard({ standings, defaultAvatarUrl: DEFAULT_AVATAR, cacheTtlMs: 0, now: () => NOW });
  const pair: Pair = {
    prefix: `r${run}-`,
    model: {
      ingest: new WagerIngest(model.ingest, { now: () => NOW }),
      board: board(model.standings),
      standings: model.standings,
      affiliateKey: async (externalId) => model.affiliateKey(externalId),
    },
    real: {
      ingest: new WagerIngest(mariadbIngest(db.write), { now: () => NOW }),
      board: board(mariadbStandings(db.read)),
      standings: mariadbStandings(db.read),
      affiliateKey: async (externalId) => {
        const [rows] = await db.read.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [
          externalId,
        ]);
        return rows[0] === undefined ? undefined : Number(rows[0].id);
      },
    },
  };
  // Every sequence starts with all its users known (later upserts rename and move them).
  await new UpsertUsers(draw.everyUser(POOLS, (i) => i)).run({}, pair);
  return pair;
}

/** Sequences run; each holds up to MAX_COMMANDS commands. */
const NUM_RUNS = Number(process.env.MODEL_RUNS ?? 150);
const MAX_COMMANDS = 30;

describe("the MariaDB adapters against the reference model", () => {
  it(`answer every call identically over ${NUM_RUNS} random sequences`, async () => {
    const commandsRun = await draw.runSequences(commands, MAX_COMMANDS, NUM_RUNS, pairOf);
    console.log(
      `model-based: ${NUM_RUNS} sequences, ${commandsRun} commands; outcomes ${JSON.stringify(Object.fromEntries([...seen].sort()))}`,
    );
    // The draws reach boards with entries, not only empty ones.
    expect(seen.get("query:weighted") ?? 0).toBeGreaterThan(NUM_RUNS / 4);
    expect(seen.get("race:placed") ?? 0).toBeGreaterThan(NUM_RUNS / 4);
  }, 300_000);
});
