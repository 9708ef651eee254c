/**
 * The database stopped for real in the middle of webhook delivery: a throwaway MariaDB (its own data directory
 * and loopback port), the service (dist/) delivering to a slow receiver (each POST answered 2 s late), and the
 * mariadbd killed (SIGKILL, then started again on the same data directory and port) or frozen (SIGSTOP, then
 * SIGCONT) while attempts are in flight at the receiver. Their outcomes arrive while the database is away: the
 * worker keeps them and records them once it is back (within the claim's lease), so nothing is lost (every event
 * delivered), nothing is sent twice, and every POST is in the delivery log exactly once. While the database is
 * away the worker logs one warning, not one per poll, and one line when delivery resumes.
 */
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, ensureDatabaseExists, openDatabase } from "../../src/storage/database.js";
import { migrate } from "../../src/storage/migration-runner.js";
import { WebhookSecretBox } from "../../src/storage/webhook-secrets.js";
import { MariadbWebhookStore } from "../../src/storage/webhooks.js";
import { newWebhookSecret } from "../../src/webhooks/signature.js";
import { until } from "../support/mariadb-topology.js";
import {
  type LogLine,
  type MariaDbProcess,
  mariaDbAvailable,
  type ServerProcess,
  sleep,
  startMariaDb,
  startServerProcess,
} from "../support/processes.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const available = mariaDbAvailable();
const DATABASE = "tw_webhooks_stop";
const RECEIVER_DELAY_MS = 2_000;
/** The database stays away this long: well inside the lease (2 × 5 s + 5 s). */
const OUTAGE_MS = 4_000;

let mariadb: MariaDbProcess | undefined;
let database: Database | undefined;
let store: MariadbWebhookStore;
let receiver: WebhookReceiver | undefined;
let server: ServerProcess | undefined;

beforeAll(async () => {
  if (!available) return;
  try {
    mariadb = await startMariaDb();
    const url = mariadb.url(DATABASE);
    await ensureDatabaseExists(url);
    database = await openDatabase({ url, poolSize: 2 });
    await migrate(database.write);
    store = new MariadbWebhookStore(database.write, new WebhookSecretBox(undefined));
    receiver = await startWebhookReceiver();
    receiver.answer(() => ({ status: 200, body: "ok", delayMs: RECEIVER_DELAY_MS }));
    server = await startServerProcess({
      DATABASE_URL: url,
      WEBHOOK_ALLOW_PRIVATE_URLS: "true",
      WEBHOOK_POLL_MS: "100",
      WEBHOOK_TIMEOUT_MS: "5000",
      WEBHOOK_RETRY_SCALE: "0.001",
    });
  } catch (error) {
    await closeAll();
    throw error;
  }
}, 60_000);

async function closeAll(): Promise<void> {
  await server?.stop("SIGKILL");
  await receiver?.close();
  await database?.close();
  await mariadb?.destroy();
}

afterAll(closeAll, 60_000);

/** `count` endpoints named `ep_<label><n>` with `perEndpoint` test events each; the message ids. */
async function eventsTo(label: string, count: number, perEndpoint: number): Promise<string[]> {
  const ids: string[] = [];
  for (let e = 0; e < count; e++) {
    const endpoint = await store.insertEndpoint({
      id: `ep_${label}${e}`,
      affiliateExternalId: "aff-stop",
      url: `${receiver?.url}/${label}/${e}`,
      description: `${label} ${e}`,
      eventTypes: ["webhook.test"],
      secret: newWebhookSecret(),
    });
    for (let n = 0; n < perEndpoint; n++) {
      ids.push((await store.sendTestEvent(endpoint.id, 1793491200 + n, { endpoint: e, n })).messageId);
    }
  }
  return ids;
}

function receiptsUnder(label: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of receiver?.received ?? []) {
    if (!request.path.startsWith(`/${label}/`)) continue;
    const id = request.headers["webhook-id"] ?? "";
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** message id → [state, [attempt, status][]] for the deliveries to `ep_<label>…`. */
async function deliveryLog(label: string): Promise<Map<string, [string, [number, number | null][]]>> {
  const [rows] = await (database as Database).write.query<RowDataPacket[]>(
    `SELECT e.message_id, d.state, a.attempt, a.status
       FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
       LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
      WHERE d.endpoint_id LIKE ? ORDER BY d.id, a.attempt`,
    [`ep\\_${label}%`],
  );
  const log = new Map<string, [string, [number, number | null][]]>();
  for (const row of rows) {
    const id = String(row.message_id);
    const entry = log.get(id) ?? [String(row.state), []];
    if (row.attempt !== null) entry[1].push([Number(row.attempt), row.status === null ? null : Number(row.status)]);
    log.set(id, entry);
  }
  return log;
}

const workerLines = (from: number): LogLine[] =>
  (server?.logs ?? []).slice(from).filter((line) => line.msg.startsWith("webhook delivery"));

/**
 * Events sent, the database made unavailable by `outage` once some attempts are in flight at the receiver,
 * then every event waited for: each arrived once, is delivered with one attempt (200) in its log, and the
 * worker's log lines of the outage are returned.
 */
async function deliverThrough(label: string, outage: () => Promise<void>): Promise<LogLine[]> {
  const logFrom = server?.logs.length ?? 0;
  const ids = await eventsTo(label, 3, 6);
  await until("attempts in flight at the receiver", async () => receiptsUnder(label).size >= 3, 20_000);
  await outage();
  await until(
    `${ids.length} deliveries delivered`,
    async () => {
      const log = await deliveryLog(label);
      return log.size === ids.length && [...log.values()].every(([state]) => state === "delivered");
    },
    40_000,
  );
  const lines = workerLines(logFrom);
  console.log(`${label}: the worker's log lines:\n${lines.map((line) => JSON.stringify(line)).join("\n")}`);
  const receipts = receiptsUnder(label);
  const log = await deliveryLog(label);
  expect([...receipts.keys()].sort()).toEqual([...ids].sort());
  expect(ids.filter((id) => receipts.get(id) !== 1)).toEqual([]);
  for (const id of ids) expect(log.get(id)).toEqual(["delivered", [[1, 200]]]);
  return lines;
}

describe.skipIf(!available)("the database stopped mid-delivery", () => {
  it("killed (SIGKILL) and started again: every event delivered once, each attempt recorded once, one warning", async () => {
    const lines = await deliverThrough("killed", async () => {
      const pid = mariadb?.pid ?? 0;
      process.kill(pid, "SIGKILL");
      await until("mariadbd gone", async () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      });
      await sleep(OUTAGE_MS);
      await mariadb?.start();
    });
    const warnings = lines.filter((line) => line.level === 40 || line.level === "warn");
    expect(warnings.map((line) => line.msg)).toEqual(["webhook delivery worker: the database is unavailable"]);
    expect(lines.map((line) => line.msg)).toContain("webhook delivery worker: the database answers again");
  }, 90_000);

  it("frozen (SIGSTOP) and thawed (SIGCONT): every event delivered once, each attempt recorded once", async () => {
    const lines = await deliverThrough("frozen", async () => {
      const pid = mariadb?.pid ?? 0;
      process.kill(pid, "SIGSTOP");
      try {
        await sleep(OUTAGE_MS);
      } finally {
        process.kill(pid, "SIGCONT");
      }
    });
    expect(lines.filter((line) => line.level === 40 || line.level === "warn").length).toBeLessThanOrEqual(1);
  }, 90_000);
});
