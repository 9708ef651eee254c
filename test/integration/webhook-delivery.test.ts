/**
 * The delivery worker over a real MariaDB and real sockets: receivers on 127.0.0.1 (so the worker
 * runs with private addresses allowed), every delivery verified with the spec's reference package
 * (`standardwebhooks`). Retries use a scaled schedule (hours become milliseconds).
 */
import { randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { every } from "../../src/jobs/every.js";
import { openDatabase } from "../../src/platform/database/database.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { StoredWebhookDelivery, StoredWebhookEndpoint, WebhookStore } from "../../src/ports/webhooks.js";
import { type AttemptResult, type DeliveryObserver, DeliveryWorker } from "../../src/webhooks/core/delivery-worker.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import { createWebhookTransport } from "../../src/webhooks/outbound/webhook-sender.js";
import { LOST_ATTEMPT_ERROR } from "../../src/webhooks/sql/webhook-lost-claims.js";
import { MariadbWebhookStore } from "../../src/webhooks/sql/webhooks.js";
import { useTestDatabase } from "../support/database.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhook_delivery");
const box = new SecretBox(randomBytes(32));
/** 5 s → 2.5 ms, 5 min → 150 ms, 30 min → 0.9 s. */
const SCALE = 0.0005;
let store: MariadbWebhookStore;
let receiver: WebhookReceiver;
const transports: { close(): void }[] = [];
const workers: DeliveryWorker[] = [];

beforeAll(async () => {
  store = new MariadbWebhookStore(database.db.write, box);
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  for (const t of transports) t.close();
  await receiver?.close();
});

function worker(
  options: {
    allowPrivate?: boolean;
    timeoutMs?: number;
    leaseMs?: number;
    instance?: string;
    results?: AttemptResult[];
    observer?: DeliveryObserver;
  } = {},
  on: WebhookStore = store,
): DeliveryWorker {
  const transport = createWebhookTransport({ allowPrivate: options.allowPrivate ?? true, userAgent: "topwagers-test" });
  transports.push(transport);
  const made = new DeliveryWorker({
    schedule: every,
    store: on,
    transport,
    retryScale: SCALE,
    timeoutMs: options.timeoutMs ?? 3_000,
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
    pollMs: 20,
    instance: options.instance ?? "test",
    observer: { attempt: (result) => options.results?.push(result), ...options.observer },
  });
  workers.push(made);
  return made;
}

let endpoints = 0;
async function endpoint(url = `${receiver.url}/hook`): Promise<{ endpoint: StoredWebhookEndpoint; secret: string }> {
  const secret = newWebhookSecret();
  endpoints += 1;
  const stored = await store.insertEndpoint({
    id: `ep_test${endpoints}`,
    affiliateExternalId: "aff-1",
    url,
    description: `test ${endpoints}`,
    eventTypes: ["webhook.test"],
    secret,
  });
  return { endpoint: stored, secret };
}

async function rows(sql: string, params: unknown[] = []): Promise<RowDataPacket[]> {
  const [result] = await database.db.write.query<RowDataPacket[]>(sql, params);
  return result;
}

const sinceNow = () => receiver.received.length;

/** A delivery as compared here: its state, its attempt count and its log as [attempt, status, error]. */
const stateAndLog = (stored: StoredWebhookDelivery | undefined) => [
  stored?.state,
  stored?.attempts,
  stored?.attemptLog.map((a) => [a.attempt, a.status, a.error]),
];

/** Two POSTs arrived, and the log has both: the first as unknown (its outcome never recorded), then the delivered one. */
const LOST_THEN_DELIVERED = [
  "delivered",
  2,
  [
    [1, null, LOST_ATTEMPT_ERROR],
    [2, 200, null],
  ],
];

/** The receiver got exactly one webhook since `before`: the test event with `data`, signed with `secret`. */
function expectOneTestEvent(before: number, messageId: string, secret: string, data: object): void {
  const got = receiver.received.slice(before);
  expect(got.map((r) => r.headers["webhook-id"])).toEqual([messageId]);
  expect(new Webhook(secret).verify(got[0]?.body ?? "", got[0]?.headers ?? {})).toEqual({
    type: "webhook.test",
    timestamp: "2026-11-01T00:00:00.000Z",
    data,
  });
}
describe("delivering", () => {
  it("sends a signed webhook.test that standardwebhooks verifies, once, and records it delivered", async () => {
    const { endpoint: ep, secret } = await endpoint();
    const before = sinceNow();
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { hello: "world" });
    expect(await worker().runOnce()).toBe(1);
    const got = receiver.received.slice(before);
    expect(got).toHaveLength(1);
    const request = got[0] as (typeof got)[number];
    expect(request.body).toBe(
      '{"type":"webhook.test","timestamp":"2026-11-01T00:00:00.000Z","data":{"hello":"world"}}',
    );
    expect(new Webhook(secret).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    expect(request.headers["webhook-id"]).toBe(delivery.messageId);
    expect(request.headers["content-type"]).toBe("application/json");
    expect(Math.abs(Number(request.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(5);
    const stored = await store.findDelivery(delivery.id);
    expect([stored?.state, stored?.attempts, stored?.lastStatus, stored?.lastResponse]).toEqual([
      "delivered",
      1,
      200,
      "ok",
    ]);
    expect(stored?.attemptLog.map((a) => [a.attempt, a.status, a.error])).toEqual([[1, 200, null]]);
    expect(await worker().runOnce()).toBe(0);
  });

  it("signs with both secrets during a rotation's overlap, then with the new one only", async () => {
    const { endpoint: ep, secret: old } = await endpoint();
    const fresh = newWebhookSecret();
    await store.rotateSecret(ep.id, fresh, Math.floor(Date.now() / 1000) + 3600);
    let before = sinceNow();
    await store.sendTestEvent(ep.id, 1793491200, { n: 1 });
    await worker().runOnce();
    let request = receiver.received[before] as (typeof receiver.received)[number];
    expect(request.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(new Webhook(fresh).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    expect(new Webhook(old).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    // The overlap ends.
    await rows("UPDATE webhook_endpoints SET previous_secret_expires_at = ? WHERE id = ?", [
      Math.floor(Date.now() / 1000) - 1,
      ep.id,
    ]);
    before = sinceNow();
    await store.sendTestEvent(ep.id, 1793491200, { n: 2 });
    await worker().runOnce();
    request = receiver.received[before] as (typeof receiver.received)[number];
    expect(request.headers["webhook-signature"]?.split(" ")).toHaveLength(1);
    expect(new Webhook(fresh).verify(request.body, request.headers)).toEqual(JSON.parse(request.body));
    expect(() => new Webhook(old).verify(request.body, request.headers)).toThrow("No matching signature found");
  });

  it("receiver down, then 500, then 429 with Retry-After, then up: delivered, every attempt logged in order", async () => {
    // A port nobody listens on: the first attempt is refused.
    const down = await startWebhookReceiver();
    const downUrl = `${down.url}/hook`;
    await down.close();
    const { endpoint: ep, secret } = await endpoint(downUrl);
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { retry: true });
    // The first attempt by one step of a worker (not its loop): the loop's second attempt, a scaled 100 ms later,
    // could go to the dead port again before the URL below is changed on a loaded machine (seen once: 5 attempts).
    expect(await worker().runOnce()).toBe(1);
    expect((await store.findDelivery(delivery.id))?.attempts).toBe(1);
    // Now the receiver is there but failing: 500 first, then 429 asking for 1 s, then 200.
    const answers = [{ status: 500, body: "boom" }, { status: 429, headers: { "retry-after": "1" } }, { status: 200 }];
    const before = sinceNow();
    receiver.answer(() => answers.shift() ?? { status: 200 });
    await rows("UPDATE webhook_endpoints SET url = ? WHERE id = ?", [`${receiver.url}/hook`, ep.id]);
    const w = worker();
    w.start();
    const done = await (async () => {
      for (let i = 0; i < 1_500; i++) {
        const found = await store.findDelivery(delivery.id);
        if (found?.state === "delivered") return found;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error("not delivered");
    })();
    receiver.answer(() => ({ status: 200, body: "ok" }));
    await w.stop();
    const log = done.attemptLog;
    expect(log.map((a) => [a.attempt, a.status])).toEqual([
      [1, null],
      [2, 500],
      [3, 429],
      [4, 200],
    ]);
    expect(log[0]?.error).toMatch(/^ECONNREFUSED: /);
    expect(log[1]?.response).toBe("boom");
    // Retry-After: 1 s after the 429 ended, not the 0.9 s of the scaled schedule.
    const third = log[2] as (typeof log)[number];
    expect((log[3]?.startedAtMs ?? 0) - (third.startedAtMs + third.durationMs)).toBeGreaterThanOrEqual(1000);
    // Ascending attempt times; the same webhook-id every time, each attempt signed afresh and verified.
    expect(log.map((a) => a.startedAtMs)).toEqual([...log.map((a) => a.startedAtMs)].sort((a, b) => a - b));
    const got = receiver.received.slice(before);
    expect(got.map((r) => r.headers["webhook-id"])).toEqual([
      delivery.messageId,
      delivery.messageId,
      delivery.messageId,
    ]);
    for (const r of got) expect(new Webhook(secret).verify(r.body, r.headers)).toEqual(JSON.parse(r.body));
    expect(done.deliveredAtMs).not.toBeNull();
  }, 60_000);
});

describe("a fleet of workers", () => {
  it("two workers on one database, each with its own pool: every delivery sent exactly once", async () => {
    const eps = await Promise.all([1, 2, 3, 4].map(() => endpoint()));
    const other = await openDatabase({ url: database.url, poolSize: 4 });
    try {
      const before = sinceNow();
      const sent = new Map<string, string>();
      for (let i = 0; i < 50; i++) {
        for (const { endpoint: ep } of eps) {
          const d = await store.sendTestEvent(ep.id, 1793491200, { i });
          sent.set(d.messageId, ep.id);
        }
      }
      const results: AttemptResult[] = [];
      const a = worker({ instance: "a", results });
      const b = worker({ instance: "b", results }, new MariadbWebhookStore(other.write, box));
      a.start();
      b.start();
      await receiver.waitFor(before + sent.size, 50_000);
      await a.stop();
      await b.stop();
      const got = receiver.received.slice(before);
      const ids = got.map((r) => r.headers["webhook-id"] as string);
      expect(ids.length).toBe(200);
      expect(new Set(ids).size).toBe(200);
      expect([...new Set(ids)].sort()).toEqual([...sent.keys()].sort());
      expect(results.filter((r) => r !== "delivered")).toEqual([]);
      const [counts] = await database.db.write.query<RowDataPacket[]>(
        `SELECT a.instance, COUNT(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.endpoint_id IN (?) GROUP BY a.instance ORDER BY a.instance`,
        [eps.map((e) => e.endpoint.id)],
      );
      // Both sent some (the claim is shared, not one worker taking everything), 200 attempts in all.
      expect(counts.map((c) => c.instance)).toEqual(["a", "b"]);
      expect(counts.reduce((sum, c) => sum + Number(c.n), 0)).toBe(200);
      const states = await rows(
        "SELECT state, attempts, COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id IN (?) GROUP BY state, attempts",
        [eps.map((e) => e.endpoint.id)],
      );
      expect(states.map((s) => [s.state, s.attempts, Number(s.n)])).toEqual([["delivered", 1, 200]]);
      // In event order per endpoint: at most 4 in flight per endpoint and worker (two workers may both
      // claim 4 at one moment), so each endpoint's events arrive at most 7 places from their order.
      for (const { endpoint: ep } of eps) {
        const order = got
          .filter((r) => sent.get(r.headers["webhook-id"] as string) === ep.id)
          .map((r) => JSON.parse(r.body).data.i);
        const farthest = Math.max(...order.map((value: number, index: number) => Math.abs(value - index)));
        expect(farthest).toBeLessThanOrEqual(7);
      }
    } finally {
      await other.close();
    }
  }, 90_000);

  it("a worker that dies holding a claim: its lease runs out, its attempt is logged as unknown and another worker sends the delivery; the dead one's late record is refused", async () => {
    const { endpoint: ep, secret } = await endpoint();
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { orphan: true });
    // The dying worker's claim, as it stood when the process was killed: leased for 300 ms, never finished.
    const [claimed] = await store.claimDue({
      nowMs: Date.now(),
      limit: 10,
      perEndpoint: 4,
      busyEndpoints: new Map(),
      leaseMs: 300,
    });
    expect(claimed?.id).toBe(delivery.id);
    const before = sinceNow();
    const survivor = worker({ instance: "survivor" });
    expect(await survivor.runOnce()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await survivor.runOnce()).toBe(1);
    expectOneTestEvent(before, delivery.messageId, secret, { orphan: true });
    const stale = await store.recordAttempt(claimed as NonNullable<typeof claimed>, {
      attempt: { attempt: 1, startedAtMs: Date.now(), durationMs: 1, status: 500, error: null, response: null },
      state: "pending",
      nextAttemptAtMs: Date.now(),
      succeeded: false,
      instance: "dead",
    });
    expect(stale).toBe(false);
    const stored = await store.findDelivery(delivery.id);
    // The dead worker's attempt is in the log as unknown (it may have arrived), then the survivor's.
    expect(stateAndLog(stored)).toEqual(LOST_THEN_DELIVERED);
  });
});

describe("the database lost mid-delivery", () => {
  it("an attempt whose outcome cannot be recorded is sent again once the database is back and the lease ran out", async () => {
    const { endpoint: ep, secret } = await endpoint();
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { lost: true });
    const lost = Object.assign(new Error("Connection lost: The server closed the connection."), {
      code: "PROTOCOL_CONNECTION_LOST",
      fatal: true,
    });
    let down = true;
    const errors: unknown[] = [];
    // The store as the worker sees it while the database is away: claims worked, recording fails.
    const flaky = new Proxy(store, {
      get(target, property, receiver) {
        if (property === "recordAttempts" && down) return async () => Promise.reject(lost);
        if (property === "claimDue" && down && errors.length > 0) return async () => Promise.reject(lost);
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const w = worker({ leaseMs: 300, instance: "flaky", observer: { error: (error) => errors.push(error) } }, flaky);
    const before = sinceNow();
    expect(await w.runOnce()).toBe(1);
    expect(errors).toEqual([lost]);
    // Sent, but not recorded: still pending and leased.
    expect((await store.findDelivery(delivery.id))?.attempts).toBe(0);
    await expect(w.runOnce()).rejects.toBe(lost);
    down = false;
    expect(await w.runOnce()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await w.runOnce()).toBe(1);
    const got = receiver.received.slice(before);
    expect(got.map((r) => r.headers["webhook-id"])).toEqual([delivery.messageId, delivery.messageId]);
    for (const r of got) expect(new Webhook(secret).verify(r.body, r.headers)).toMatchObject({ data: { lost: true } });
    const stored = await store.findDelivery(delivery.id);
    // Two POSTs arrived, and the log has both: the unrecorded one as unknown, then the delivered one.
    expect(stateAndLog(stored)).toEqual(LOST_THEN_DELIVERED);
  });

  it("an outcome that cannot be recorded is kept and recorded once the database answers within the lease: sent once", async () => {
    const { endpoint: ep } = await endpoint();
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { kept: true });
    const gone = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:3306"), { code: "ECONNREFUSED" });
    // Recording fails three times (the database is away for about 1.5 s of retries), then works.
    let refusals = 3;
    const away: WebhookStore = Object.create(store, {
      recordAttempts: {
        value: (items: Parameters<WebhookStore["recordAttempts"]>[0]) =>
          refusals-- > 0 ? Promise.reject(gone) : store.recordAttempts(items),
      },
    });
    const told: string[] = [];
    const kept = worker(
      {
        leaseMs: 10_000,
        instance: "kept",
        observer: {
          error: (error) => told.push(error === gone ? "error" : String(error)),
          recovered: () => told.push("recovered"),
        },
      },
      away,
    );
    const before = sinceNow();
    expect(await kept.runOnce()).toBe(1);
    expect(receiver.received.slice(before).map((r) => r.headers["webhook-id"])).toEqual([delivery.messageId]);
    expect(told).toEqual(["error", "error", "error", "recovered"]);
    expect(stateAndLog(await store.findDelivery(delivery.id))).toEqual(["delivered", 1, [[1, 200, null]]]);
    expect(await kept.runOnce()).toBe(0);
  });
});

describe("the delivery rules", () => {
  it("410 Gone disables the endpoint with a reason; its other deliveries fail without an attempt", async () => {
    const gone = await startWebhookReceiver();
    try {
      gone.answer(() => ({ status: 410 }));
      const { endpoint: ep } = await endpoint(`${gone.url}/hook`);
      const first = await store.sendTestEvent(ep.id, 1793491200, { n: 1 });
      await worker().runOnce();
      const after = await store.findEndpoint(ep.id);
      expect(after?.enabled).toBe(false);
      expect(after?.disabledReason).toMatch(/^the receiver answered 410 Gone on \d{4}-\d\d-\d\dT/);
      expect((await store.findDelivery(first.id))?.state).toBe("failed");
      // An event queued before the endpoint was disabled.
      const second = await store.sendTestEvent(ep.id, 1793491200, { n: 2 });
      await worker().runOnce();
      const failed = await store.findDelivery(second.id);
      expect([failed?.state, failed?.attempts, failed?.lastError]).toEqual([
        "failed",
        0,
        `endpoint disabled: ${after?.disabledReason}`,
      ]);
      expect(gone.received).toHaveLength(1);
    } finally {
      await gone.close();
    }
  });

  it("refuses 127.0.0.1, 169.254.169.254 and plain http without WEBHOOK_ALLOW_PRIVATE_URLS, and never connects", async () => {
    const cases = [
      [`https://127.0.0.1:${receiver.port}/hook`, "refused: the host 127.0.0.1 is not a public address"],
      ["https://169.254.169.254/latest/meta-data/", "refused: the host 169.254.169.254 is not a public address"],
      [`${receiver.url}/hook`, "refused: the URL must be an https URL"],
    ] as const;
    const before = sinceNow();
    for (const [url, error] of cases) {
      const { endpoint: ep } = await endpoint(url);
      const delivery = await store.sendTestEvent(ep.id, 1793491200, {});
      await worker({ allowPrivate: false }).runOnce();
      const stored = await store.findDelivery(delivery.id);
      expect([stored?.state, stored?.attempts, stored?.lastStatus, stored?.lastError]).toEqual([
        "pending",
        1,
        null,
        error,
      ]);
      await store.deleteEndpoint(ep.id);
    }
    expect(receiver.received.length).toBe(before);
  });

  it("does not follow a redirect: a 302 is a failed attempt and the target is never called", async () => {
    const before = sinceNow();
    receiver.answer((request) =>
      request.path === "/moved" ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } } : { status: 200 },
    );
    try {
      const { endpoint: ep } = await endpoint(`${receiver.url}/moved`);
      const delivery = await store.sendTestEvent(ep.id, 1793491200, {});
      await worker().runOnce();
      const stored = await store.findDelivery(delivery.id);
      expect([stored?.state, stored?.lastStatus]).toEqual(["pending", 302]);
      expect(receiver.received.slice(before).map((r) => r.path)).toEqual(["/moved"]);
    } finally {
      receiver.answer(() => ({ status: 200, body: "ok" }));
    }
  });

  it("times a slow receiver out", async () => {
    const slow = await startWebhookReceiver();
    try {
      slow.answer(() => ({ status: 200, delayMs: 2_000 }));
      const { endpoint: ep } = await endpoint(`${slow.url}/hook`);
      const delivery = await store.sendTestEvent(ep.id, 1793491200, {});
      const started = Date.now();
      await worker({ timeoutMs: 300 }).runOnce();
      // Well under the receiver's 2 s: the deadline ended the attempt, not the answer.
      expect(Date.now() - started).toBeLessThan(1_900);
      const stored = await store.findDelivery(delivery.id);
      expect([stored?.state, stored?.lastStatus, stored?.lastError]).toEqual([
        "pending",
        null,
        "no complete answer within 300 ms",
      ]);
      expect(stored?.attemptLog[0]?.durationMs).toBeGreaterThanOrEqual(290);
    } finally {
      await slow.close();
    }
  });

  it("redelivers a delivered webhook with the same webhook-id, as one more attempt", async () => {
    const { endpoint: ep, secret } = await endpoint();
    const delivery = await store.sendTestEvent(ep.id, 1793491200, { again: true });
    await worker().runOnce();
    const before = sinceNow();
    const again = await store.redeliver(delivery.id, Date.now());
    expect([again?.state, again?.attempts]).toEqual(["pending", 1]);
    await worker().runOnce();
    expectOneTestEvent(before, delivery.messageId, secret, { again: true });
    const stored = await store.findDelivery(delivery.id);
    expect([stored?.state, stored?.attempts, stored?.attemptLog.map((a) => a.status)]).toEqual([
      "delivered",
      2,
      [200, 200],
    ]);
  });

  it("fails a delivery after its last attempt and disables an endpoint failing for 5 (scaled) days", async () => {
    const failing = await startWebhookReceiver();
    try {
      failing.answer(() => ({ status: 503 }));
      const { endpoint: ep } = await endpoint(`${failing.url}/hook`);
      const delivery = await store.sendTestEvent(ep.id, 1793491200, {});
      // Its ninth failed attempt, as the schedule would have brought it.
      await rows("UPDATE webhook_deliveries SET attempts = 9 WHERE id = ?", [delivery.id]);
      await worker().runOnce();
      const failed = await store.findDelivery(delivery.id);
      expect([failed?.state, failed?.attempts, failed?.lastStatus, failed?.nextAttemptAtMs]).toEqual([
        "failed",
        10,
        503,
        null,
      ]);
      expect((await store.findEndpoint(ep.id))?.enabled).toBe(true);
      // Failing since 5 scaled days (216 s) ago: the next failure disables it.
      await rows("UPDATE webhook_endpoints SET failing_since_ms = ? WHERE id = ?", [Date.now() - 216_001, ep.id]);
      await store.sendTestEvent(ep.id, 1793491200, {});
      await worker().runOnce();
      const disabled = await store.findEndpoint(ep.id);
      expect(disabled?.enabled).toBe(false);
      expect(disabled?.disabledReason).toMatch(/^every attempt failed since \d{4}-.*Z \(5 days\)$/);
    } finally {
      await failing.close();
    }
  });
});
