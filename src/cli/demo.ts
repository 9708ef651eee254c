/**
 * `npm run demo`: a newcomer's first run. Loads a small deterministic demo
 * data set (once), creates a fresh demo key, prints ready-to-paste curl and
 * buf curl commands for the current half-month, and serves.
 */
import { parseArgs } from "node:util";
import type { RowDataPacket } from "mysql2/promise";
import { generateApiKey } from "../auth/api-key-secret.js";
import { loadConfig } from "../config.js";
import { serve } from "../main.js";
import { insertApiKey } from "../storage/api-keys.js";
import { ensureDatabaseExists, openDatabase } from "../storage/database.js";
import { migrate } from "../storage/migrations.js";
import { insertWagers, type UserProfile, upsertUsers, type WagerRecord } from "../storage/users-and-wagers.js";

export const DEMO_AFFILIATE = "demo-affiliate";

/** Small, fast, reproducible generator (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The current half-month in UTC: the 1st–15th or the 16th–last day, both ends inclusive. */
export function currentHalfMonth(nowSeconds: number): { start: number; end: number } {
  const now = new Date(nowSeconds * 1000);
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  const firstHalf = now.getUTCDate() <= 15;
  const start = Date.UTC(year, month, firstHalf ? 1 : 16) / 1000;
  const nextStart = (firstHalf ? Date.UTC(year, month, 16) : Date.UTC(year, month + 1, 1)) / 1000;
  return { start, end: nextStart - 1 };
}

/** Demo users and wagers over the last 45 days; amounts are built from integers, never floats. */
export function demoData(nowSeconds: number): { users: UserProfile[]; wagers: WagerRecord[] } {
  const next = random(20241202);
  const names = ["ace", "blaze", "nova", "rex", "luna", "kai", "zed", "mira", "odin", "vega", "juno", "taro"];
  const users: UserProfile[] = [];
  for (let i = 1; i <= 120; i++) {
    const affiliateId = i <= 100 ? DEMO_AFFILIATE : "other-affiliate";
    users.push({
      id: `demo-user-${i}`,
      affiliateId,
      username: `${names[i % names.length]}_${String(1000 + i * 7)}`,
      avatar: i % 3 === 0 ? "" : `https://avatars.example.com/demo/${i}.png`,
    });
  }
  const wagers: WagerRecord[] = [];
  const from = nowSeconds - 45 * 86_400;
  for (let n = 1; n <= 20_000; n++) {
    // Heavier players wager more often: pick users with a skewed distribution.
    const userIndex = Math.min(users.length - 1, Math.floor(users.length * next() ** 2.2));
    const whole = Math.floor(Math.exp(next() * 7));
    const fraction = String(Math.floor(next() * 100_000_000)).padStart(8, "0");
    wagers.push({
      id: `demo-wager-${n}`,
      userId: users[userIndex]?.id ?? "demo-user-1",
      amount: `${whole}.${fraction}`,
      placedAt: from + Math.floor(next() * (nowSeconds - from)),
    });
  }
  return { users, wagers };
}

export async function runDemo(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { port: { type: "string" } } });
  const config = loadConfig(values.port === undefined ? process.env : { ...process.env, PORT: values.port });
  await ensureDatabaseExists(config.databaseUrl);
  const db = await openDatabase({ url: config.databaseUrl, poolSize: 2 });
  let key: ReturnType<typeof generateApiKey>;
  try {
    await migrate(db.write);
    const [rows] = await db.read.query<RowDataPacket[]>(
      "SELECT COUNT(*) AS n FROM users u JOIN affiliates a ON a.id = u.affiliate_id WHERE a.external_id = ?",
      [DEMO_AFFILIATE],
    );
    if (Number(rows[0]?.n ?? 0) === 0) {
      const now = Math.floor(Date.now() / 1000);
      const data = demoData(now);
      process.stderr.write(`Loading demo data: ${data.users.length} users, ${data.wagers.length} wagers...\n`);
      await upsertUsers(db.write, data.users);
      for (let i = 0; i < data.wagers.length; i += 1000) await insertWagers(db.write, data.wagers.slice(i, i + 1000));
    }
    key = generateApiKey();
    await insertApiKey(db.write, {
      id: key.id,
      hash: key.hash,
      affiliateExternalId: DEMO_AFFILIATE,
      label: "demo",
      rateLimit: null,
    });
  } finally {
    await db.close();
  }
  const running = await serve(config);
  const period = currentHalfMonth(Math.floor(Date.now() / 1000));
  const body = JSON.stringify({ startTimestamp: period.start, endTimestamp: period.end, numUsers: 10 });
  const base = `http://localhost:${running.port}`;
  process.stdout.write(
    [
      "",
      `topwagers demo is running on ${base} (Ctrl-C to stop).`,
      "",
      `Demo API key for affiliate "${DEMO_AFFILIATE}" (shown once):`,
      `  ${key.secret}`,
      "",
      "Top 10 of the current half-month over REST:",
      `  curl -s ${base}${config.basePath}/top-affiliate-wagers-by-period \\`,
      `    -H 'Authorization: Bearer ${key.secret}' -H 'Content-Type: application/json' \\`,
      `    -d '${body}'`,
      "",
      "The same over gRPC (buf curl reads the API through server reflection):",
      `  npx buf curl --protocol grpc --http2-prior-knowledge \\`,
      `    -H 'Authorization: Bearer ${key.secret}' \\`,
      `    -d '${body}' \\`,
      `    ${base}/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod`,
      "",
    ].join("\n"),
  );
  const stop = () => {
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
