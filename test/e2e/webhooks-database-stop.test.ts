/**
 * The database stopped for real in the middle of webhook delivery: a throwaway MariaDB (its own data directory
 * and loopback port), the service (dist/) delivering to a slow receiver (each POST answered 2 s late), and the
 * mariadbd killed (SIGKILL, then started again on the same data directory and port) or frozen (SIGSTOP, then
 * SIGCONT) while attempts are in flight at the receiver. Their outcomes arrive while the database is away: the
 * worker keeps them and records them once it is back (within the claim's lease), so nothing is lost (every event
 * delivered), nothing is sent twice, and every POST is in the delivery log exactly once. While the database is
 * away the worker logs one warning, not one per poll, and one line when delivery resumes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, ensureDatabaseExists, openDatabase } from "../../src/platform/database/database.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { MariadbWebhookStore } from "../../src/webhooks/sql/webhooks.js";
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
import { allDelivered, deliveryLogOf, receiptsOf, testEventsTo } from "../support/webhook-deliveries.js";
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
    store = new MariadbWebhookStore(database.write, new SecretBox(undefined));
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

const eventsTo = (label: string, endpoints: number, perEndpoint: number) =>
  testEventsTo(store, receiver as WebhookReceiver, label, endpoints, perEndpoint);
const receiptsUnder = (label: string) => receiptsOf(receiver as WebhookReceiver, label);

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
  const pool = (database as Database).write;
  await until(`${ids.length} deliveries delivered`, () => allDelivered(pool, label, ids.length), 40_000);
  const lines = workerLines(logFrom);
  console.log(`${label}: the worker's log lines:\n${lines.map((line) => JSON.stringify(line)).join("\n")}`);
  const receipts = receiptsUnder(label);
  const log = await deliveryLogOf(pool, label);
  expect([...receipts.keys()].sort()).toEqual([...ids].sort());
  expect(ids.filter((id) => receipts.get(id) !== 1)).toEqual([]);
  for (const id of ids) expect(log.get(id)).toEqual(["delivered", [[1, 200, ""]]]);
  return lines;
}

/** The running mariadbd's PID (never 0, which would signal this whole process group). */
function mariadbPid(): number {
  const pid = mariadb?.pid;
  if (pid === undefined || pid <= 0) throw new Error("the throwaway mariadbd is not running");
  return pid;
}

describe.skipIf(!available)("the database stopped mid-delivery", () => {
  it("killed (SIGKILL) and started again: every event delivered once, each attempt recorded once, one warning", async () => {
    const lines = await deliverThrough("killed", async () => {
      const pid = mariadbPid();
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
      const pid = mariadbPid();
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
