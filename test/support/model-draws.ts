/**
 * What the model-based tests draw with fast-check, and how a draw becomes ingest input: users and wagers as
 * indexes into each test's own pools (so that sequences collide on purpose), their ids by a sequence's prefix.
 */
import fc from "fast-check";

/** A profile drawn: which user, which affiliate, which of the test's names and avatars. */
export interface DrawnUser {
  readonly user: number;
  readonly affiliate: number;
  readonly name: number;
  readonly avatar: number;
}

/** A wager drawn: which wager id and user, its amount, time and (optionally) weight. */
export interface DrawnWager {
  readonly wager: number;
  readonly user: number;
  readonly amount: string;
  readonly placedAt: number;
  readonly weightBps?: number | undefined;
}

/** A test's pools: how many users, affiliates and wager ids, its names and avatars, and how values are drawn. */
export interface DrawPools {
  readonly users: number;
  readonly affiliates: number;
  readonly wagers: number;
  readonly names: readonly string[];
  readonly avatars: readonly string[];
  readonly amount: fc.Arbitrary<string>;
  readonly time: fc.Arbitrary<number>;
  readonly weight: fc.Arbitrary<number | undefined>;
}

/** 1 to `maxLength` profiles (renames, moves between affiliates). */
export function users(pools: DrawPools, maxLength: number): fc.Arbitrary<DrawnUser[]> {
  return fc.array(
    fc.record({
      user: fc.nat(pools.users - 1),
      affiliate: fc.nat(pools.affiliates - 1),
      name: fc.nat(pools.names.length - 1),
      avatar: fc.nat(pools.avatars.length - 1),
    }),
    { minLength: 1, maxLength },
  );
}

/** 1 to `maxLength` wagers (new ones, an id again with other content, repeats inside a batch). */
export function wagers(pools: DrawPools, maxLength: number): fc.Arbitrary<DrawnWager[]> {
  return fc.array(
    fc.record(
      {
        wager: fc.nat(pools.wagers - 1),
        user: fc.nat(pools.users - 1),
        amount: pools.amount,
        placedAt: pools.time,
        weightBps: pools.weight,
      },
      { requiredKeys: ["wager", "user", "amount", "placedAt"] },
    ),
    { minLength: 1, maxLength },
  );
}

/** The ids of one sequence: every user, affiliate and wager id starts with its prefix. */
export function sequenceIds(prefix: string) {
  return {
    user: (i: number) => `${prefix}u${i}`,
    affiliate: (i: number) => `${prefix}a${i}`,
    wager: (i: number) => `${prefix}w${i}`,
  };
}

/** Drawn profiles as ingest takes them. */
export function profilesOf(users: readonly DrawnUser[], pools: DrawPools, prefix: string) {
  const id = sequenceIds(prefix);
  return users.map((u) => ({
    id: id.user(u.user),
    affiliateId: id.affiliate(u.affiliate),
    username: pools.names[u.name] as string,
    avatar: pools.avatars[u.avatar] as string,
  }));
}

/** Drawn wagers as ingest takes them (the time as the protocol's int64). */
export function wagersOf(wagers: readonly DrawnWager[], prefix: string) {
  const id = sequenceIds(prefix);
  return wagers.map((w) => ({
    id: id.wager(w.wager),
    userId: id.user(w.user),
    amount: w.amount,
    placedAt: BigInt(w.placedAt),
    ...(w.weightBps === undefined ? {} : { weightBps: w.weightBps }),
  }));
}

/** Every user of the pools, known from a sequence's start: user i in affiliate i mod affiliates, avatar i mod 2. */
export function everyUser(pools: DrawPools, name: (user: number) => number): DrawnUser[] {
  return Array.from({ length: pools.users }, (_, i) => ({
    user: i,
    affiliate: i % pools.affiliates,
    name: name(i),
    avatar: i % 2,
  }));
}

/**
 * Runs `numRuns` random sequences of up to `maxCommands` commands, each on what `start` makes (a new pair of
 * sides); answers how many commands ran in all.
 */
export async function runSequences<Real extends object>(
  commands: fc.Arbitrary<fc.AsyncCommand<object, Real>>[],
  maxCommands: number,
  numRuns: number,
  start: () => Promise<Real>,
): Promise<number> {
  let commandsRun = 0;
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands, size: "medium" }), async (cmds) => {
      await fc.asyncModelRun(async () => ({ model: {}, real: await start() }), cmds);
      commandsRun += [...cmds].length;
    }),
    { numRuns },
  );
  return commandsRun;
}

/**
 * A command of a model-based sequence made from one draw: always applicable, and shown in a counterexample as its
 * class's name and the draw, e.g. `Upsert([{"user":0,…}])`.
 */
export abstract class DrawnCommand<Draw, Real extends object> implements fc.AsyncCommand<object, Real> {
  constructor(readonly drawn: Draw) {}
  check = () => true;
  abstract run(model: object, real: Real): Promise<void>;
  toString = () => `${this.constructor.name}(${JSON.stringify(this.drawn)})`;
}
