/**
 * The in-memory key set at size.
 *
 *   npm run bench -- keys [--keys 100000] [--lookups 1000000]
 *
 * Stores N keys (a tenth of them publishable, with two origins each), then in this process: the time
 * of a whole load (start, and the minute's reload), the heap it holds (after a full GC, before and
 * after), and the cost of a lookup of a valid key and of a bad one (well-formed, unknown), against
 * the baseline of the SHA-256 alone that every lookup makes.
 */

import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { apiKeyHashText, generateApiKey } from "../src/keys/core/api-key-secret.js";
import { KeySet } from "../src/keys/core/key-set.js";
import { findApiKeysByIds, listUsableApiKeys } from "../src/keys/sql/api-keys.js";
import { openDatabase } from "../src/platform/database/database.js";
import { recreateDatabase } from "./ingest.js";
import { fmt, machineDescription, table } from "./support.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Nanoseconds per call of `work` over `count` calls (after a warm-up of a tenth). */
function nsPer(count: number, work: (i: number) => unknown): number {
  for (let i = 0; i < count / 10; i++) work(i);
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) work(i);
  return Number(process.hrtime.bigint() - started) / count;
}

export async function runKeysBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { keys: { type: "string", default: "100000" }, lookups: { type: "string", default: "1000000" } },
  });
  const count = Number(values.keys);
  const lookups = Number(values.lookups);
  const databaseUrl = process.env.BENCH_KEYS_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_keys";
  await recreateDatabase(databaseUrl);
  const db = await openDatabase({ url: databaseUrl, poolSize: 2 });
  try {
    await db.write.query("INSERT INTO affiliates (external_id, created_at) VALUES ('bench-aff', UNIX_TIMESTAMP())");
    const secrets: string[] = [];
    for (let start = 0; start < count; start += 1000) {
      const rows: unknown[][] = [];
      for (let i = start; i < Math.min(count, start + 1000); i++) {
        const publishable = i % 10 === 0;
        const key = generateApiKey(publishable ? "publishable" : "secret");
        if (secrets.length < 10_000) secrets.push(key.secret);
        rows.push([
          key.id,
          key.hash,
          1,
          `label ${i}`,
          publishable ? 1 : 0,
          publishable ? JSON.stringify([`https://board${i}.example.com`, "http://localhost:5173"]) : null,
        ]);
      }
      await db.write.query(
        "INSERT INTO api_keys (id, key_hash, affiliate_id, label, publishable, allowed_origins, created_at) VALUES ?",
        [rows.map((r) => [...r, Math.floor(Date.now() / 1000)])],
      );
    }
    const store = {
      usable: (now: number) => listUsableApiKeys(db.read, now),
      byIds: (ids: readonly string[]) => findApiKeysByIds(db.read, ids),
    };
    const before = heapAfterGc();
    const keys = new KeySet(store);
    const loads: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await keys.load();
      loads.push(performance.now() - started);
    }
    const held = heapAfterGc() - before;
    if (keys.size !== count) throw new Error(`loaded ${keys.size} keys of ${count}`);

    const bad = Array.from({ length: 10_000 }, () => generateApiKey().secret);
    const valid = nsPer(lookups, (i) => {
      const found = keys.lookup(secrets[i % secrets.length] as string);
      if (!found.found) throw new Error("a stored key was not found");
    });
    const unknown = nsPer(lookups, (i) => {
      if (keys.lookup(bad[i % bad.length] as string).found) throw new Error("a bad key was found");
    });
    const hashOnly = nsPer(lookups, (i) => apiKeyHashText(secrets[i % secrets.length] as string));

    process.stdout.write(
      [
        `npm run bench -- keys --keys ${count} --lookups ${lookups}`,
        `machine: ${await machineDescription(databaseUrl)}`,
        "",
        table(
          ["measure", "value"],
          [
            ["keys held (a tenth publishable, 2 origins each)", count],
            ["whole load, 3 runs (ms)", loads.map((ms) => fmt(ms, 0)).join(" / ")],
            ["heap held after GC (MB)", fmt(held / 2 ** 20, 1)],
            ["heap per key (bytes)", fmt(held / count, 0)],
            ["lookup of a valid key (ns)", fmt(valid, 0)],
            ["lookup of an unknown well-formed key (ns)", fmt(unknown, 0)],
            ["baseline: the SHA-256 alone (ns)", fmt(hashOnly, 0)],
          ],
        ),
        "",
      ].join("\n"),
    );
  } finally {
    await db.close();
  }
}
