/**
 * Model-based test of boards kept current from the change feed (src/boards/core/held-boards.ts):
 * random sequences of renames, moves, wagers (placed anywhere in the past, with weights, amounts that
 * tie) and voids run on the reference model and on MariaDB, and after every step every watched board
 * held incrementally must equal a full computation of the same board on the same side, row for row
 * (user, name, avatar, exact totals), and the two sides must agree.
 *
 * The held boards show few rows (2, with a margin of 1; and 3 with none) over a dozen users, so
 * sequences push shown users below the margin, tie at the cut and at the bound, rename users held and
 * not held, and move the bound; the counts printed at the end show that most loads were incremental.
 */
import fc from "fast-check";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeFeed } from "../../src/boards/core/change-feed.js";
import { ChangeSet } from "../../src/boards/core/change-set.js";
import { HeldBoards } from "../../src/boards/core/held-boards.js";
import { mariadbChanges } from "../../src/boards/sql/change-store.js";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { mariadbIngest } from "../../src/ingest/sql/ingest-store.js";
import type { ChangeStore } from "../../src/ports/changes.js";
import type { KeyedStandings, RankedRow, StandingsStore } from "../../src/ports/standings.js";
import { canonicalDecimal } from "../../src/values/decimal.js";
import type { RankBy } from "../../src/values/weights.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import * as draw from "../support/model-draws.js";
import { ReferenceModel } from "../support/reference-model.js";

const utc = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h) / 1000;
const NOW = utc(2026, 3, 1, 12);
const EDGES = [utc(2026, 1, 1), utc(2026, 1, 16), utc(2026, 2, 1), utc(2026, 2, 16), utc(2026, 3, 1)];
const time = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...EDGES), fc.constantFrom(-3600, -1, 0, 1, 3599)).map(([e, d]) => e + d),
  },
  { weight: 1, arbitrary: fc.integer({ min: utc(2025, 12, 20), max: NOW }) },
);
/** Few amounts, so that totals tie often (at the cut and at the bound). */
const amount = fc.constantFrom("1", "1", "2", "0.5", "3", "1.5", "0.00000001", "10");
const weight = fc.option(fc.constantFrom(0, 5000, 10_000, 2500), { nil: undefined });

/** Boards watched: periods that include now (whole month, half-month, a misaligned span) and one long span. */
const PERIODS: readonly (readonly [number, number])[] = [
  [utc(2026, 2, 16), utc(2026, 3, 16) - 1],
  [utc(2026, 1, 20) + 37, NOW + 3600],
  [utc(2025, 12, 1), utc(2026, 4, 1) - 1],
];
const POOLS: draw.DrawPools = {
  users: 12,
  affiliates: 2,
  wagers: 80,
  /** Duplicate names make the user id decide; non-ASCII ones test code point order. */
  names: ["amy", "amy", "Amy", "bob", "émile", "\u{1F600}", "\uFF5Ezed", "z", "b", "a"],
  avatars: ["", "https://img.example.test/a.png"],
  amount,
  time,
  weight,
};
/** Shown rows and margin of each held-board configuration. */
const SHAPES = [
  { shown: 2, margin: 1 },
  { shown: 3, margin: 0 },
];

interface Side {
  readonly name: string;
  readonly ingest: WagerIngest;
  readonly standings: StandingsStore & { readonly keyed: KeyedStandings };
  readonly feed: ChangeFeed;
  readonly held: readonly HeldBoards[];
  affiliateKey(externalId: string): Promise<number | undefined>;
}

interface Pair {
  readonly prefix: string;
  readonly sides: readonly [Side, Side];
}

const seen = new Map<string, number>();
const tally = (what: string, n = 1) => seen.set(what, (seen.get(what) ?? 0) + n);

class Upsert extends draw.DrawnCommand<readonly draw.DrawnUser[], Pair> {
  async run(_: object, pair: Pair) {
    const profiles = draw.profilesOf(this.drawn, POOLS, pair.prefix);
    for (const side of pair.sides) await side.ingest.upsertUsers(profiles);
    await checkBoards(pair);
  }
}

class Record extends draw.DrawnCommand<readonly draw.DrawnWager[], Pair> {
  async run(_: object, pair: Pair) {
    const wagers = draw.wagersOf(this.drawn, pair.prefix);
    const outcomes = [];
    for (const side of pair.sides) outcomes.push(await side.ingest.recordWagers(wagers));
    expect(outcomes[0]).toEqual(outcomes[1]);
    await checkBoards(pair);
  }
}

class Void extends draw.DrawnCommand<readonly number[], Pair> {
  async run(_: object, pair: Pair) {
    const ids = this.drawn.map((w) => `${pair.prefix}w${w}`);
    const outcomes = [];
    for (const side of pair.sides) outcomes.push(await side.ingest.voidWagers(ids));
    expect(outcomes[0]).toEqual(outcomes[1]);
    await checkBoards(pair);
  }
}

/** A board's rows as compared: user, name, avatar and exact totals in canonical form. */
const comparable = (rows: readonly RankedRow[]) =>
  rows.map((r) => [
    r.userExternalId,
    r.username,
    r.avatarUrl ?? "",
    canonicalDecimal(r.total),
    canonicalDecimal(r.weightedTotal),
  ]);

/** After a step: on each side, every held board equals a full computation; and the sides agree. */
async function checkBoards(pair: Pair): Promise<void> {
  const answers: unknown[][] = [[], []];
  for (const [index, side] of pair.sides.entries()) {
    await side.feed.caughtUp();
    for (let a = 0; a < POOLS.affiliates; a++) {
      const affiliateId = await side.affiliateKey(`${pair.prefix}a${a}`);
      if (affiliateId === undefined) continue;
      for (const [start, end] of PERIODS) {
        for (const rankBy of ["wagered", "weighted"] as RankBy[]) {
          for (const [shape, held] of side.held.entries()) {
            const { shown } = SHAPES[shape] as { shown: number };
            const board = { key: `${affiliateId}:${start}:${end}:${rankBy}`, affiliateId, start, end, rankBy };
            const incremental = comparable(await held.rows(board));
            const full = comparable(await side.standings.topUsers(affiliateId, start, end, shown, rankBy));
            expect(incremental, `${side.name} ${JSON.stringify(board)} shown ${shown}`).toEqual(full);
            answers[index]?.push(full);
            if (full.length > 0) tally("board:listed");
          }
        }
      }
    }
  }
  expect(answers[0]).toEqual(answers[1]);
}

const upsert = draw.users(POOLS, 2).map((users) => new Upsert(users));
const record = draw.wagers(POOLS, 12).map((wagers) => new Record(wagers));
const voids = fc.array(fc.nat(POOLS.wagers - 1), { minLength: 1, maxLength: 4 }).map((ws) => new Void(ws));
const commands = [upsert, upsert, record, record, record, voids, voids];

let database: TestDatabase;
let run = 0;
const open: Side[] = [];
/** Computations of every sequence's held boards per side, added up when its sides close. */
const computations = {
  model: { full: 0, incremental: 0, unchanged: 0, mismatches: 0 },
  mariadb: { full: 0, incremental: 0, unchanged: 0, mismatches: 0 },
};

async function closeSides(): Promise<void> {
  for (const side of open.splice(0)) {
    await side.feed.stop();
    const sum = computations[side.name as keyof typeof computations];
    for (const held of side.held) {
      for (const kind of Object.keys(sum) as (keyof typeof sum)[]) sum[kind] += held.computations[kind];
    }
  }
}

beforeAll(async () => {
  database = await createTestDatabase("incremental_model");
});

afterAll(async () => {
  await closeSides();
  await database?.drop();
});

function sideOf(
  name: string,
  ingest: WagerIngest,
  standings: StandingsStore,
  changes: ChangeStore,
  affiliateKey: Side["affiliateKey"],
): Side {
  const keyed = standings.keyed as KeyedStandings;
  const held = SHAPES.map(
    ({ shown, margin }) =>
      new HeldBoards({
        store: keyed,
        shown,
        margin,
        checkEveryMs: Number.POSITIVE_INFINITY,
        maxBoards: 1000,
        maxPendingUsers: 1000,
        nowMs: () => NOW * 1000,
      }),
  );
  const feed = new ChangeFeed(changes, {
    intervalMs: 60_000,
    onChanges: (rows) => {
      const set = new ChangeSet(rows);
      for (const boards of held) boards.applyChanges(set);
    },
  });
  feed.start();
  const side = { name, ingest, standings: { ...standings, keyed }, feed, held, affiliateKey };
  open.push(side);
  return side;
}

async function pairOf(): Promise<Pair> {
  run += 1;
  await closeSides();
  const db = database.db;
  const model = new ReferenceModel({ now: () => NOW });
  const modelSide = sideOf(
    "model",
    new WagerIngest(model.ingest, { now: () => NOW }),
    model.standings,
    model.changeRows,
    async (id) => model.affiliateKey(id),
  );
  const realSide = sideOf(
    "mariadb",
    new WagerIngest(mariadbIngest(db.write), { now: () => NOW }),
    mariadbStandings(db.read),
    mariadbChanges(db.read),
    async (externalId) => {
      const [rows] = await db.read.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = ?", [
        externalId,
      ]);
      return rows[0] === undefined ? undefined : Number(rows[0].id);
    },
  );
  const pair: Pair = { prefix: `i${run}-`, sides: [modelSide, realSide] };
  await new Upsert(draw.everyUser(POOLS, (i) => i % POOLS.names.length)).run({}, pair);
  return pair;
}

const NUM_RUNS = Number(process.env.INCREMENTAL_MODEL_RUNS ?? 25);
const MAX_COMMANDS = 40;

describe("boards held incrementally against full computations", () => {
  it(`equal a full computation after every step of ${NUM_RUNS} random sequences, on the model and on MariaDB`, async () => {
    await draw.runSequences(commands, MAX_COMMANDS, NUM_RUNS, pairOf);
    await closeSides();
    console.log(`incremental model: ${JSON.stringify(computations)}; ${JSON.stringify(Object.fromEntries(seen))}`);
    // Most loads were incremental, and boards had rows.
    for (const side of [computations.model, computations.mariadb]) {
      expect(side.incremental).toBeGreaterThan(side.full);
      expect(side.mismatches).toBe(0);
    }
    // The same sequences make the same computations on both sides (the feeds name the same users).
    expect(computations.mariadb).toEqual(computations.model);
    expect(seen.get("board:listed") ?? 0).toBeGreaterThan(NUM_RUNS * 10);
  }, 600_000);
});
