/**
 * Webhooks as an operator runs them: the built CLI (`topwagers webhooks create|list|test|deliveries|
 * redeliver`) against a database that real server processes deliver from, a receiver on 127.0.0.1
 * (WEBHOOK_ALLOW_PRIVATE_URLS=true), every delivery verified with standardwebhooks. A server
 * SIGKILLed while it holds a claimed delivery (its attempt in flight): another server sends it once
 * the lease runs out. A delivery that fails every attempt ends failed with one log line. Needs
 * `npm run -s build`.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOST_ATTEMPT_ERROR } from "../../src/webhooks/sql/webhook-lost-claims.js";
import { argv, runCli } from "../support/cli.js";
import { useTestDatabase } from "../support/database.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const database = useTestDatabase("webhooks_fleet");
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  WEBHOOK_POLL_MS: "100",
  WEBHOOK_TIMEOUT_MS: "1000",
  WEBHOOK_RETRY_SCALE: "0.0001",
  WEBHOOK_SECRET_KEY: "a".repeat(64),
};
let receiver: WebhookReceiver;
const servers: ServerProcess[] = [];

function webhooks(...args: string[]) {
  return runCli(["webhooks", ...args], database.url, ENV);
}

async function server(): Promise<ServerProcess> {
  const started = await startServerProcess({ DATABASE_URL: database.url, ...ENV });
  servers.push(started);
  return started;
}

async function deliveriesOf(endpointId: string): Promise<
  {
    id: string;
    webhookId: string;
    state: string;
    attempts: number;
    lastStatus: number | null;
    attemptLog: { status: number | null; error: string | null }[];
  }[]
> {
  const listed = await webhooks("deliveries", endpointId, "--json");
  expect([listed.code, listed.stderr]).toEqual([0, ""]);
  return JSON.parse(listed.stdout).deliveries;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop("SIGTERM").catch(() => undefined)));
  await receiver?.close();
});

describe("topwagers webhooks, delivered by the servers", () => {
  it("create, list, test, deliveries and redeliver; two servers running, each event sent once", async () => {
    const created = await webhooks(
      ...argv(`create --affiliate cli-aff --url ${receiver.url}/cli`),
      ...argv("--event race.finalized --event webhook.test --description payouts --json"),
    );
    expect([created.code, created.stderr]).toEqual([0, ""]);
    const endpoint = JSON.parse(created.stdout);
    expect(endpoint).toMatchObject({
      affiliateId: "cli-aff",
      url: `${receiver.url}/cli`,
      eventTypes: ["race.finalized", "webhook.test"],
      enabled: true,
    });
    expect(endpoint.secret).toMatch(/^whsec_/);
    const listed = await webhooks("list", "--affiliate", "cli-aff");
    expect(listed.stdout).toContain(
      `${endpoint.id}  cli-aff    enabled  race.finalized,webhook.test  ${receiver.url}/cli`,
    );
    expect(listed.stdout).not.toContain(endpoint.secret);
    // The secret is stored encrypted under WEBHOOK_SECRET_KEY, never in clear.
    const [rows] = await database.db.write.query("SELECT secret FROM webhook_endpoints WHERE id = ?", [endpoint.id]);
    expect(String((rows as { secret: string }[])[0]?.secret)).toMatch(/^enc1:/);

    await Promise.all([server(), server()]);
    const before = receiver.received.length;
    for (let i = 0; i < 5; i++) expect((await webhooks("test", endpoint.id)).code).toBe(0);
    await receiver.waitFor(before + 5, 30_000);
    const got = receiver.received.slice(before);
    for (const request of got)
      expect(new Webhook(endpoint.secret).verify(request.body, request.headers)).toMatchObject({
        type: "webhook.test",
      });
    const log = await until(
      () => deliveriesOf(endpoint.id),
      (list) => list.length === 5 && list.every((d) => d.state === "delivered"),
      20_000,
    );
    expect(new Set(got.map((r) => r.headers["webhook-id"]))).toEqual(new Set(log.map((d) => d.webhookId)));
    expect(log.map((d) => [d.attempts, d.lastStatus])).toEqual(Array(5).fill([1, 200]));

    const first = log[0] as (typeof log)[number];
    const again = await webhooks("redeliver", first.id);
    expect(again.stdout).toBe(
      `Delivery ${first.id} is due again with the same webhook-id ${first.webhookId}; a running server sends it.\n`,
    );
    await receiver.waitFor(before + 6, 10_000);
    expect(receiver.received[before + 5]?.headers["webhook-id"]).toBe(first.webhookId);
    const missing = await webhooks("redeliver", "999999");
    expect([missing.code, missing.stderr]).toEqual([
      1,
      "error: no webhook delivery with id 999999 (see: topwagers webhooks list)\n",
    ]);
    await Promise.all(servers.splice(0).map((s) => s.stop("SIGTERM")));
  }, 90_000);

  it("a server SIGKILLed with a delivery in flight: another server sends it after the lease", async () => {
    const hanging = await startWebhookReceiver();
    try {
      // The first request is never answered (the killed server's attempt); the rest are.
      hanging.answer((request) =>
        hanging.received.indexOf(request) === 0 ? { status: 200, delayMs: 60_000 } : { status: 200 },
      );
      const created = JSON.parse(
        (
          await webhooks(
            "create",
            "--affiliate",
            "kill-aff",
            "--url",
            `${hanging.url}/k`,
            "--event",
            "webhook.test",
            "--json",
          )
        ).stdout,
      );
      const doomed = await server();
      await webhooks("test", created.id);
      await hanging.waitFor(1, 10_000);
      doomed.child.kill("SIGKILL");
      await new Promise((resolve) => doomed.child.once("exit", resolve));
      servers.splice(servers.indexOf(doomed), 1);
      const killedAt = Date.now();
      await server();
      await hanging.waitFor(2, 40_000);
      // The lease is 2 × WEBHOOK_TIMEOUT_MS + 5 s = 7 s from the claim (plus the second server's start).
      expect(Date.now() - killedAt).toBeLessThan(30_000);
      const [a, b] = hanging.received;
      expect(b?.headers["webhook-id"]).toBe(a?.headers["webhook-id"]);
      expect(new Webhook(created.secret).verify(b?.body ?? "", b?.headers ?? {})).toMatchObject({
        type: "webhook.test",
      });
      const log = await until(
        () => deliveriesOf(created.id),
        (list) => list[0]?.state === "delivered",
        20_000,
      );
      // The killed server never recorded its attempt: the survivor logs it as unknown (the receiver got it),
      // then its own, delivered. Two POSTs arrived; the log shows both.
      expect(log.map((d) => [d.state, d.attempts, d.attemptLog.map((x) => [x.status, x.error])])).toEqual([
        [
          "delivered",
          2,
          [
            [null, LOST_ATTEMPT_ERROR],
            [200, null],
          ],
        ],
      ]);
    } finally {
      await hanging.close();
    }
  }, 90_000);

  it("a delivery that fails every attempt ends failed after ten, with one log line", async () => {
    const failing = await startWebhookReceiver();
    try {
      failing.answer(() => ({ status: 500, body: "down" }));
      const created = JSON.parse(
        (
          await webhooks(
            "create",
            "--affiliate",
            "fail-aff",
            "--url",
            `${failing.url}/f`,
            "--event",
            "webhook.test",
            "--json",
          )
        ).stdout,
      );
      const running = servers[0] ?? (await server());
      await webhooks("test", created.id);
      // 10 attempts on the schedule scaled by 0.0001 (24 h → 8.6 s): about 26 s in all.
      const line = await running.waitForLog((l) => l.msg === "webhook delivery failed for good", 60_000);
      expect(line).toMatchObject({
        endpointId: created.id,
        affiliateId: "fail-aff",
        eventType: "webhook.test",
        attempts: 10,
        lastStatus: 500,
        reason: "no attempt left after 10",
      });
      expect(JSON.stringify(line)).not.toContain(created.secret);
      const [delivery] = await deliveriesOf(created.id);
      expect([delivery?.state, delivery?.attempts, delivery?.attemptLog.length]).toEqual(["failed", 10, 10]);
      expect(failing.received).toHaveLength(10);
    } finally {
      await failing.close();
    }
  }, 90_000);
});
