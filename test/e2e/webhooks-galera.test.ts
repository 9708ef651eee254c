/**
 * The webhook claim on a two-node Galera cluster (started once for this file, every process stopped by PID,
 * also when the start fails): a delivery worker on each node (in-process, each store's pool on its own node),
 * one real HTTP receiver counting every POST by webhook-id.
 *
 * 1. Many events, both workers claiming at once under a lease longer than any attempt: SKIP LOCKED does not see
 *    the other node's claims, so both pick the same rows and certification lets one claim commit (the other is
 *    retried). Every event arrives exactly once, with one attempt in its log, and both nodes read the same log.
 * 2. Across lease expiry (docs/webhooks.md): some receipts are held past a short lease, so the delivery is sent
 *    again by a worker after the lease ran out (same webhook-id) and the stalled worker's outcome is refused
 *    (counted lost). The delivery's log shows every POST the receiver got: the stalled one as an attempt with an
 *    unknown outcome, then the delivered one.
 */
import { randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { every } from "../../src/jobs/every.js";
import { type Database, ensureDatabaseExists, openDatabase } from "../../src/platform/database/database.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { migrate } from "../../src/schema/migration-runner.js";
import { type AttemptResult, DeliveryWorker } from "../../src/webhooks/core/delivery-worker.js";
import { createWebhookTransport } from "../../src/webhooks/outbound/webhook-sender.js";
import { LOST_ATTEMPT_ERROR } from "../../src/webhooks/sql/webhook-lost-claims.js";
import { MariadbWebhookStore } from "../../src/webhooks/sql/webhooks.js";
import { startGaleraCluster } from "../support/galera.js";
import { type NodeProcess, queryOne, Topology, until } from "../support/mariadb-topology.js";
import { allDelivered, deliveryLogOf, receiptsOf, testEventsTo } from "../support/webhook-deliveries.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const DB = "tw_webhooks_galera";
const box = new SecretBox(randomBytes(32));

let topology: Topology | undefined;
let receiver: WebhookReceiver | undefined;
/** One database (pools on one node) and one store per node: [node1, node2]. */
const databases: Database[] = [];
const stores: MariadbWebhookStore[] = [];
const transports: { close(): void }[] = [];
const running: DeliveryWorker[] = [];

beforeAll(async () => {
  try {
    topology = new Topology("webhooks-galera");
    await startGaleraCluster(topology, 2);
    await ensureDatabaseExists((topology.nodes[0] as NodeProcess).url("root", DB));
    for (const node of topology.nodes) {
      const database = await openDatabase({ url: node.url("root", DB), poolSize: 4 });
      databases.push(database);
      stores.push(new MariadbWebhookStore(database.write, box));
    }
    await migrate((databases[0] as Database).write);
    receiver = await startWebhookReceiver();
  } catch (error) {
    await closeAll();
    throw error;
  }
}, 180_000);

async function closeAll(): Promise<void> {
  await Promise.allSettled(running.map((worker) => worker.stop()));
  for (const transport of transports) transport.close();
  await Promise.allSettled(databases.map((database) => database.close()));
  await receiver?.close();
  await topology?.remove();
}

afterAll(closeAll, 60_000);

/** A worker on node `index` (its store's pool is on that node only), recording each attempt's result. */
function workerOn(index: number, leaseMs: number, results: AttemptResult[]): DeliveryWorker {
  const transport = createWebhookTransport({ allowPrivate: true, userAgent: "topwagers-test" });
  transports.push(transport);
  const worker = new DeliveryWorker({
    schedule: every,
    store: stores[index] as MariadbWebhookStore,
    transport,
    retryScale: 0.001,
    timeoutMs: 8_000,
    pollMs: 20,
    leaseMs,
    maxInFlight: 16,
    perEndpoint: 8,
    instance: `node${index + 1}`,
    observer: { attempt: (result) => results.push(result) },
  });
  running.push(worker);
  return worker;
}

async function stopWorkers(): Promise<void> {
  await Promise.all(running.splice(0).map((worker) => worker.stop()));
}

/** Galera's counters of conflicts on a node: certification failures and brute-force aborts. */
async function conflicts(node: NodeProcess): Promise<number> {
  const row = await queryOne(
    node,
    "SELECT SUM(VARIABLE_VALUE) AS n FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')",
  );
  return Number(row.n);
}

async function deliveredOnBoth(label: string, total: number): Promise<void> {
  for (const [index, database] of databases.entries()) {
    await until(
      `${total} deliveries labelled ${label} delivered, read on node ${index + 1}`,
      () => allDelivered(database.write, label, total),
      60_000,
    );
  }
}

const logOn = (index: number, label: string) => deliveryLogOf((databases[index] as Database).write, label);
const receiptsUnder = (label: string) => receiptsOf(receiver as WebhookReceiver, label);
const eventsTo = (label: string, endpoints: number, perEndpoint: number) =>
  testEventsTo(stores[0] as MariadbWebhookStore, receiver as WebhookReceiver, label, endpoints, perEndpoint);

describe("the webhook claim on a two-node Galera cluster", () => {
  it("two workers, one per node, claiming the same events at once: each arrives once, one attempt each", async () => {
    const nodes = (topology as Topology).nodes;
    const ids = await eventsTo("many", 4, 60);
    const conflictsBefore = (await Promise.all(nodes.map(conflicts))).reduce((a, b) => a + b, 0);
    const results: AttemptResult[] = [];
    // A lease far longer than any attempt here: no claim runs out, so every POST is the only one of its claim.
    const workers = [workerOn(0, 60_000, results), workerOn(1, 60_000, results)];
    for (const worker of workers) worker.start();
    await receiver?.waitFor(ids.length, 90_000);
    await deliveredOnBoth("many", ids.length);
    await stopWorkers();

    const receipts = receiptsUnder("many");
    expect([...receipts.keys()].sort()).toEqual([...ids].sort());
    expect([...receipts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(results.filter((r) => r !== "delivered")).toEqual([]);
    expect(results).toHaveLength(ids.length);
    const [onFirst, onSecond] = [await logOn(0, "many"), await logOn(1, "many")];
    expect([...onSecond.entries()]).toEqual([...onFirst.entries()]);
    for (const id of ids) expect(onFirst.get(id)).toEqual(["delivered", [[1, 200, ""]]]);
    // Both nodes did part of the work (the attempts name their instance).
    const [byNode] = await (databases[0] as Database).write.query<RowDataPacket[]>(
      `SELECT a.instance, COUNT(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.endpoint_id LIKE 'ep\\_many%' GROUP BY a.instance ORDER BY a.instance`,
    );
    const counts = byNode.map((row) => [String(row.instance), Number(row.n)] as const);
    expect(counts.map(([instance]) => instance)).toEqual(["node1", "node2"]);
    expect(counts.reduce((sum, [, n]) => sum + n, 0)).toBe(ids.length);
    const conflictsAfter = (await Promise.all(nodes.map(conflicts))).reduce((a, b) => a + b, 0);
    console.log(
      `Galera claim: ${ids.length} events, attempts by node ${JSON.stringify(counts)}, ` +
        `certification conflicts and BF aborts during the run: ${conflictsAfter - conflictsBefore}`,
    );
  }, 150_000);

  it("receipts held past the lease: sent again after it, the stalled outcome refused, every POST in the log", async () => {
    const SLOW = 4;
    const slowIds = await eventsTo("slow", 1, SLOW);
    const fastIds = await eventsTo("fast", 2, 10);
    const heldOnce = new Set<string>();
    // The first POST of each slow event is answered 4 s late (after the 1.5 s lease); every other one at once.
    receiver?.answer((request) => {
      const id = request.headers["webhook-id"] ?? "";
      if (request.path.startsWith("/slow/") && !heldOnce.has(id)) {
        heldOnce.add(id);
        return { status: 200, body: "ok", delayMs: 4_000 };
      }
      return { status: 200, body: "ok" };
    });
    const results: AttemptResult[] = [];
    const workers = [workerOn(0, 1_500, results), workerOn(1, 1_500, results)];
    for (const worker of workers) worker.start();
    await deliveredOnBoth("slow", SLOW);
    await deliveredOnBoth("fast", fastIds.length);
    // The stalled attempts end (4 s) and are refused: their claim was taken over.
    await until("the stalled attempts ended", async () => results.filter((r) => r === "lost").length >= SLOW, 15_000);
    await stopWorkers();
    receiver?.answer(() => ({ status: 200, body: "ok" }));

    const slow = receiptsUnder("slow");
    const slowLog = await logOn(0, "slow");
    for (const id of slowIds) {
      expect(slow.get(id)).toBe(2);
      expect(slowLog.get(id)).toEqual([
        "delivered",
        [
          [1, null, LOST_ATTEMPT_ERROR],
          [2, 200, ""],
        ],
      ]);
    }
    // The contract for every delivery, slow or not: the log holds every POST the receiver got, and the last one
    // delivered. (A fast one is sent twice only if this machine stalled a worker past 1.5 s; then its log says so.)
    const fast = receiptsUnder("fast");
    const fastLog = await logOn(0, "fast");
    for (const id of fastIds) {
      const [state, attempts] = fastLog.get(id) ?? ["missing", []];
      expect(state).toBe("delivered");
      expect(attempts).toHaveLength(fast.get(id) ?? 0);
      expect(attempts.at(-1)).toEqual([attempts.length, 200, ""]);
    }
    expect([...(await logOn(1, "slow")).entries()]).toEqual([...slowLog.entries()]);
    expect(results.filter((r) => r === "lost")).toHaveLength(
      [...slow.values(), ...fast.values()].reduce((sum, n) => sum + n - 1, 0),
    );
  }, 120_000);
});
