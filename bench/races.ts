/**
 * Races scenario: many races ending in the same second, frozen by the clock while boards are read.
 *
 *   npm run bench -- races [--wagers 50000000] [--races 1000] [--affiliates 100] [--instances 1] [--runs 50]
 *                          [--tick-concurrency N] [--signing on|off]
 *
 * On the seeded data set (as the query scenario seeds it, reused), creates `races` races over the
 * `affiliates` largest affiliates (10 prize ranks, a minimum, a few excluded users; every race on
 * the last complete month, review 0), then moves the clock past their end: each instance's clock
 * ticks until every race is frozen, while a reader asks month boards of the same affiliates
 * (cache off) without pause. Reports the time until all are frozen, the board read latency before
 * and during the freeze, and a live race's read (GetRace, cache off) against the plain board of
 * the same period for the largest, the median and a small affiliate. Every freeze also appends its result to the
 * results log: each instance runs the log's sequencer as the server does (bench/log-watch.ts), and the report says
 * when every result was in a checkpoint, how long each waited, and what the log's tables grew by.
 */
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import type mysql from "mysql2/promise";
import { mariadbStandings } from "../src/boards/sql/standings-store.js";
import { type Database, openDatabase } from "../src/platform/database/database.js";
import { SecretBox } from "../src/platform/database/secret-box.js";
import { newRaces, type Races } from "../src/races/core/races.js";
import { mariadbRaces } from "../src/races/sql/race-store.js";
import { migrate } from "../src/schema/migration-runner.js";
import { ensureActiveKey } from "../src/signing/core/keys.js";
import { Signer } from "../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../src/signing/sql/signing-keys.js";
import { logTableBytes, watchLog } from "./log-watch.js";
import { databaseUrl, describeDataset, ensureSeeded } from "./query.js";
import { signAndVerifyCost } from "./signing-cost.js";
import { StatementTally } from "./statement-tally.js";
import { fmt, machineDescription, percentile, table } from "./support.js";

const AVATAR = "https://x.example/a.png";
const PRIZES = ["1000.00", "500.00", "250.00", "100.00", "50.00", "25.00", "10.00", "10.00", "5.00", "5.00"];

function racesOn(
  db: Database,
  clock: { now: number },
  tickConcurrency: number | undefined,
  signer: Signer | undefined,
): Races {
  return newRaces({
    ...(signer === undefined ? {} : { signer }),
    ...(tickConcurrency === undefined ? {} : { tickConcurrency }),
    store: mariadbRaces(db.write),
    standings: mariadbStandings(db.read),
    freezeStandings: mariadbStandings(db.write),
    defaultAvatarUrl: AVATAR,
    now: () => clock.now,
  });
}

async function timed(call: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await call();
  return performance.now() - started;
}

async function samples(runs: number, call: () => Promise<unknown>): Promise<number[]> {
  await call();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) out.push(await timed(call));
  return out.sort((a, b) => a - b);
}

export async function runRacesBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      wagers: { type: "string", default: "50000000" },
      races: { type: "string", default: "1000" },
      affiliates: { type: "string", default: "100" },
      instances: { type: "string", default: "1" },
      runs: { type: "string", default: "50" },
      "tick-concurrency": { type: "string" },
      // on: every result is signed at its freeze (an active key is made when there is none); off: unsigned.
      signing: { type: "string", default: "on" },
    },
  });
  const signing = values.signing === "on";
  const wagers = Number(values.wagers);
  const raceCount = Number(values.races);
  const affiliateCount = Number(values.affiliates);
  const instanceCount = Number(values.instances);
  const runs = Number(values.runs);
  const tickConcurrency = values["tick-concurrency"] === undefined ? undefined : Number(values["tick-concurrency"]);
  const url = databaseUrl(wagers);
  await ensureSeeded(url, wagers);
  const data = await describeDataset(url);
  await migrate(data.db.write);
  const machine = await machineDescription(url);
  const loadBefore = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  const { start, end } = data.month;
  const clock = { now: start - 60 };
  const dbs: Database[] = [data.db];
  for (let i = 1; i < instanceCount; i++) dbs.push(await openDatabase({ url, poolSize: 4, queryTimeoutMs: 600_000 }));
  // The freezing instance's statements (its writes and the freeze's board reads; not the reader's boards).
  const statements = new StatementTally(data.db.write);
  const keys = mariadbSigningKeys(data.db.write, new SecretBox(undefined));
  if (signing) await ensureActiveKey(keys, Math.floor(Date.now() / 1000));
  const signer = signing ? new Signer(keys, { issuer: "https://casino.example" }) : undefined;
  const instances = dbs.map((db) => racesOn(db, clock, tickConcurrency, signer));
  const first = instances[0] as Races;
  try {
    await data.db.write.query(
      "DELETE rr FROM race_results rr JOIN races r ON r.id = rr.race_id WHERE r.slug LIKE 'bench-%'",
    );
    await data.db.write.query(
      "DELETE s FROM race_signed_results s JOIN races r ON r.id = s.race_id WHERE r.slug LIKE 'bench-%'",
    );
    await data.db.write.query("DELETE FROM races WHERE slug LIKE 'bench-%'");
    const [largest] = await data.db.read.query<mysql.RowDataPacket[]>(
      "SELECT affiliate_id, COUNT(*) AS n FROM users GROUP BY affiliate_id ORDER BY n DESC, affiliate_id LIMIT ?",
      [affiliateCount],
    );
    const affiliates = largest.map((row) => Number(row.affiliate_id));
    process.stderr.write(`creating ${raceCount} races over ${affiliates.length} affiliates…\n`);
    for (let i = 0; i < raceCount; i++) {
      const affiliateId = affiliates[i % affiliates.length] as number;
      const outcome = await first.create(affiliateId, {
        slug: `bench-${Math.floor(i / affiliates.length)}`,
        title: `Bench race ${i}`,
        startTimestamp: start,
        endTimestamp: end,
        prizes: PRIZES,
        minWagered: String((i % 5) * 10),
        reviewSeconds: 0,
        rankBy: i % 2 === 0 ? "wagered" : "weighted",
      });
      if (outcome.kind !== "ok") throw new Error(`race ${i} refused: ${JSON.stringify(outcome)}`);
    }

    // A live race's read against the plain board of the same period (cache off both).
    clock.now = end - 60;
    const readRows: (string | number)[][] = [];
    for (const affiliate of data.affiliates) {
      const raceOutcome = await first.create(affiliate.id, {
        slug: "bench-read",
        title: "read",
        startTimestamp: start,
        endTimestamp: end,
        prizes: PRIZES,
        reviewSeconds: 0,
      });
      const id = raceOutcome.kind === "ok" ? raceOutcome.value.race.id : "bench-read";
      const standings = mariadbStandings(data.db.read);
      const board = await samples(runs, () => standings.topUsers(affiliate.id, start, end, 10, "wagered"));
      const race = await samples(runs, () => first.get(affiliate.id, id));
      readRows.push([
        `${affiliate.name} (${affiliate.users} users)`,
        fmt(percentile(board, 50)),
        fmt(percentile(board, 95)),
        fmt(percentile(race, 50)),
        fmt(percentile(race, 95)),
        `${fmt(percentile(race, 95) / percentile(board, 95), 2)}x`,
      ]);
      await first.cancel(affiliate.id, id);
    }

    // Board reads before the freeze, then during it.
    const reader = mariadbStandings(data.db.read);
    let reading = true;
    const readLoop = async (into: number[]) => {
      let i = 0;
      while (reading) {
        const affiliateId = affiliates[i++ % affiliates.length] as number;
        into.push(await timed(() => reader.topUsers(affiliateId, start, end, 10, "wagered")));
      }
    };
    const before: number[] = [];
    const beforeLoop = readLoop(before);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    reading = false;
    await beforeLoop;

    clock.now = end + 1;
    const during: number[] = [];
    reading = true;
    const duringLoop = readLoop(during);
    // Each instance's results log sequencer runs as the server runs it; the log's bytes before the freezes.
    const logBytesBefore = await logTableBytes(data.db);
    const log = await watchLog(dbs);
    statements.counting = true;
    const freezeStarted = performance.now();
    let ticks = 0;
    const tickUntilDone = async (races: Races) => {
      for (;;) {
        const counts = await races.tick();
        ticks += 1;
        if (counts.started + counts.ended + counts.frozen === 0) {
          const [left] = await data.db.read.query<mysql.RowDataPacket[]>(
            "SELECT COUNT(*) AS n FROM races WHERE slug LIKE 'bench-%' AND frozen_at IS NULL AND cancelled_at IS NULL",
          );
          if (Number(left[0]?.n) === 0) return;
        }
      }
    };
    await Promise.all(instances.map(tickUntilDone));
    const freezeSeconds = (performance.now() - freezeStarted) / 1000;
    const logged = await log.stop();
    const loggedSeconds = (logged.allCheckpointedAt - freezeStarted) / 1000;
    const logBytes = (await logTableBytes(data.db)) - logBytesBefore;
    statements.counting = false;
    reading = false;
    await duringLoop;
    before.sort((a, b) => a - b);
    during.sort((a, b) => a - b);
    const [frozen] = await data.db.read.query<mysql.RowDataPacket[]>(
      "SELECT COUNT(*) AS n, COUNT(DISTINCT digest) AS d FROM races WHERE slug LIKE 'bench-%' AND frozen_at IS NOT NULL",
    );

    const [signedRows] = await data.db.read.query<mysql.RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM race_signed_results s JOIN races r ON r.id = s.race_id WHERE r.slug LIKE 'bench-%'",
    );
    const cost = await signAndVerifyCost(2_000);
    const command = `npm run bench -- races --wagers ${wagers} --races ${raceCount} --affiliates ${affiliateCount} --instances ${instanceCount} --runs ${runs}${tickConcurrency === undefined ? "" : ` --tick-concurrency ${tickConcurrency}`} --signing ${values.signing}`;
    process.stdout.write(
      [
        "",
        `command: ${command}`,
        `machine: ${machine}; load average before: ${loadBefore}`,
        `data: ${wagers} wagers; races on ${new Date(start * 1000).toISOString()} – ${new Date(end * 1000).toISOString()}`,
        "",
        table(
          ["races", "instances", "signing", "frozen", "signed", "ticks", "seconds until all frozen", "races/s"],
          [
            [
              raceCount,
              instanceCount,
              values.signing,
              Number(frozen[0]?.n),
              Number(signedRows[0]?.n),
              ticks,
              fmt(freezeSeconds, 1),
              fmt(raceCount / freezeSeconds, 0),
            ],
          ],
        ),
        "",
        `results log: ${logged.entries} entries appended during the freeze, ${logged.checkpoints} checkpoints signed; all in a checkpoint ${fmt(loggedSeconds, 1)} s after the freeze began`,
        `from an entry's commit to the first checkpoint holding it (polled every 20 ms): p50 ${fmt(logged.p50, 0)} ms, p99 ${fmt(logged.p99, 0)} ms, max ${fmt(logged.max, 0)} ms (target ≤ 2,000 ms)`,
        `the log's tables grew by ${fmt(logBytes / 1024, 0)} KiB: ${fmt(logBytes / Math.max(1, logged.entries), 0)} bytes per result (InnoDB pages; bench results-log measures it on a large log)`,
        "",
        "month board (N=10, cache off) of the race affiliates, read without pause:",
        table(
          ["when", "reads", "p50 ms", "p99 ms"],
          [
            ["5 s before the freeze", before.length, fmt(percentile(before, 50)), fmt(percentile(before, 99))],
            ["during the freeze", during.length, fmt(percentile(during, 50)), fmt(percentile(during, 99))],
          ],
        ),
        `p99 during / before: ${fmt(percentile(during, 99) / percentile(before, 99), 2)}x (target ≤ 2x)`,
        `statements of the freezing instance per race frozen (the clock's scans included): ${fmt(statements.total(raceCount).count, 1)}, ${fmt(statements.total(raceCount).ms, 2)} ms of waiting for them`,
        table(["statement", "per race", "ms per race"], statements.rows(raceCount)),
        "",
        `one signature (10-entry result, canonical JSON + EdDSA JWS): ${fmt(cost.signMicros, 1)} µs; one verification (jose): ${fmt(cost.verifyMicros, 1)} µs (2,000 of each)`,
        "",
        `a live race (GetRace: definition, next race, placement; 10 prizes) vs the plain board of its month, cache off, ${runs} runs:`,
        table(["affiliate", "board p50 ms", "board p95 ms", "race p50 ms", "race p95 ms", "race/board p95"], readRows),
        "",
      ].join("\n"),
    );
  } finally {
    for (const db of dbs) await db.close();
  }
}
