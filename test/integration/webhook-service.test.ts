/**
 * WebhookService end to end: on the internal listener with the ADMIN_TOKEN (any affiliate) and on the
 * public port with a secret key holding webhooks:write (its own affiliate only), over real sockets and
 * MariaDB, with the delivery worker running as serve() runs it and a receiver on 127.0.0.1
 * (WEBHOOK_ALLOW_PRIVATE_URLS=true). Every delivery is verified with standardwebhooks.
 */
import { type Client, Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { WebhookDeliveryState, WebhookService } from "../../gen/topwagers/v1/webhooks_pb.js";
import { startWebhookDelivery, type WebhookDelivery, webhookAdmin } from "../../src/jobs/webhook-delivery.js";
import { loadConfig } from "../../src/platform/config.js";
import { silentLogger } from "../../src/platform/logger.js";
import { refusal, sendsBearer } from "../support/calls.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

const ADMIN_TOKEN = "test-admin-token-webhooks-0123456789";
let servers: IngestServers;
let receiver: WebhookReceiver;
let delivery: WebhookDelivery;
const sessions: Http2SessionManager[] = [];

function client(token: string, where: "internal" | "public" = "internal", protocol: "connect" | "grpc" = "connect") {
  const baseUrl = where === "internal" ? servers.internalUrl : servers.publicUrl;
  const interceptors = [sendsBearer(token)];
  if (protocol === "grpc") {
    const sessionManager = new Http2SessionManager(baseUrl);
    sessions.push(sessionManager);
    return createClient(WebhookService, createGrpcTransport({ baseUrl, interceptors, sessionManager }));
  }
  return createClient(WebhookService, createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors }));
}

let admin: Client<typeof WebhookService>;

beforeAll(async () => {
  servers = await startIngestServers("webhook_service", {
    INGEST_TOKEN: TEST_INGEST_TOKEN,
    ADMIN_TOKEN,
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
    WEBHOOK_POLL_MS: "50",
    WEBHOOK_RETRY_SCALE: "0.001",
  });
  delivery = startWebhookDelivery(servers.config.webhooks, servers.database.db, servers.app.metrics, silentLogger);
  receiver = await startWebhookReceiver();
  admin = client(ADMIN_TOKEN);
});

afterAll(async () => {
  for (const session of sessions) session.abort();
  await delivery?.stop();
  await receiver?.close();
  await servers?.close();
});

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `not within ${timeoutMs} ms: ${JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("on the internal listener (ADMIN_TOKEN)", () => {
  it("creates an endpoint, answers its secret once, sends a test event that verifies, and logs the delivery", async () => {
    const created = await admin.createWebhookEndpoint({
      affiliateId: "aff-int",
      url: `${receiver.url}/int`,
      eventTypes: ["race.finalized", "webhook.test"],
      description: "finance system",
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const endpoint = created.endpoint;
    expect(endpoint?.id).toMatch(/^ep_[0-9a-f]{32}$/);
    expect([
      endpoint?.affiliateId,
      endpoint?.url,
      endpoint?.eventTypes,
      endpoint?.description,
      endpoint?.enabled,
    ]).toEqual(["aff-int", `${receiver.url}/int`, ["race.finalized", "webhook.test"], "finance system", true]);
    const listed = await admin.listWebhookEndpoints({ affiliateId: "aff-int" });
    expect(listed.endpoints.map((e) => e.id)).toEqual([endpoint?.id]);
    expect(JSON.stringify(listed, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(
      created.secret.slice(6),
    );
    const before = receiver.received.length;
    const sent = await admin.sendTestEvent({ id: endpoint?.id ?? "" });
    expect([sent.delivery?.state, sent.delivery?.eventType, sent.delivery?.attempts]).toEqual([
      WebhookDeliveryState.PENDING,
      "webhook.test",
      0,
    ]);
    await receiver.waitFor(before + 1);
    const got = receiver.received[before] as (typeof receiver.received)[number];
    expect(got.headers["webhook-id"]).toBe(sent.delivery?.webhookId);
    expect(new Webhook(created.secret).verify(got.body, got.headers)).toEqual({
      type: "webhook.test",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
      data: { endpointId: endpoint?.id, message: "A test event from topwagers: this endpoint receives webhooks." },
    });
    const log = await until(
      () => admin.listWebhookDeliveries({ endpointId: endpoint?.id ?? "" }),
      (page) => page.deliveries[0]?.state === WebhookDeliveryState.DELIVERED,
    );
    const [first] = log.deliveries;
    expect([first?.id, first?.attempts, first?.lastStatus, first?.attemptLog.map((a) => a.status)]).toEqual([
      sent.delivery?.id,
      1,
      200,
      [200],
    ]);
    expect(first?.deliveredAtMs).toBeGreaterThan(0n);
    // Counted by the worker in the app's metrics.
    const metrics = await (await fetch(`${servers.internalUrl}/metrics`)).text();
    expect(metrics).toMatch(/^topwagers_webhook_attempts_total\{result="delivered"\} [1-9]/m);
    expect(metrics).toMatch(/^topwagers_webhook_deliveries_total\{result="delivered"\} [1-9]/m);
    // Redelivered with the same webhook-id.
    const again = await admin.redeliverWebhook({ deliveryId: first?.id ?? "" });
    expect(again.delivery?.state).toBe(WebhookDeliveryState.PENDING);
    await receiver.waitFor(before + 2);
    expect(receiver.received[before + 1]?.headers["webhook-id"]).toBe(sent.delivery?.webhookId);
  });

  it("rotates with an overlap (two signatures), updates, disables with a reason, deletes", async () => {
    const created = await admin.createWebhookEndpoint({
      affiliateId: "aff-int",
      url: `${receiver.url}/rot`,
      eventTypes: ["webhook.test"],
      description: "",
    });
    const id = created.endpoint?.id ?? "";
    const rotated = await admin.rotateWebhookSecret({ id, overlapSeconds: 3600 });
    expect(rotated.secret).not.toBe(created.secret);
    const overlapEnd = Number(rotated.endpoint?.previousSecretExpiresAt);
    expect(Math.abs(overlapEnd - (Math.floor(Date.now() / 1000) + 3600))).toBeLessThanOrEqual(2);
    const before = receiver.received.length;
    await admin.sendTestEvent({ id });
    await receiver.waitFor(before + 1);
    const got = receiver.received[before] as (typeof receiver.received)[number];
    expect(got.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    for (const secret of [created.secret, rotated.secret]) {
      expect(new Webhook(secret).verify(got.body, got.headers)).toMatchObject({ type: "webhook.test" });
    }
    const updated = await admin.updateWebhookEndpoint({
      id,
      description: "ops",
      eventTypes: ["race.started"],
      enabled: false,
    });
    expect([
      updated.endpoint?.description,
      updated.endpoint?.eventTypes,
      updated.endpoint?.enabled,
      updated.endpoint?.disabledReason,
    ]).toEqual(["ops", ["race.started"], false, "disabled by its owner"]);
    const refused = await admin.sendTestEvent({ id });
    const failed = await until(
      () => admin.listWebhookDeliveries({ endpointId: id, pageSize: 1 }),
      (page) =>
        page.deliveries[0]?.id === refused.delivery?.id && page.deliveries[0]?.state === WebhookDeliveryState.FAILED,
    );
    expect([failed.deliveries[0]?.attempts, failed.deliveries[0]?.lastError, failed.nextPageToken]).toEqual([
      0,
      "endpoint disabled: disabled by its owner",
      failed.deliveries[0]?.id,
    ]);
    const older = await admin.listWebhookDeliveries({ endpointId: id, pageSize: 1, pageToken: failed.nextPageToken });
    expect([older.deliveries.length, older.nextPageToken]).toEqual([1, ""]);
    const enabled = await admin.updateWebhookEndpoint({ id, enabled: true });
    expect([enabled.endpoint?.enabled, enabled.endpoint?.disabledReason]).toEqual([true, undefined]);
    await admin.deleteWebhookEndpoint({ id });
    const gone = await refusal(admin.sendTestEvent({ id }));
    expect([gone.code, gone.findDetails(ErrorInfoSchema)[0]?.reason, gone.rawMessage]).toEqual([
      Code.NotFound,
      "WEBHOOK_NOT_FOUND",
      `no webhook endpoint has the id "${id}" (field id)`,
    ]);
  });

  it("refuses bad requests field by field, and callers without the ADMIN_TOKEN", async () => {
    const bad = await refusal(
      admin.createWebhookEndpoint({
        affiliateId: "",
        url: "ftp://x",
        eventTypes: ["race.started", "race.exploded", "race.started"],
        description: "a\nb",
      }),
    );
    expect([bad.code, bad.rawMessage]).toEqual([
      Code.InvalidArgument,
      "affiliateId is required. url: the URL must be an https or http URL. eventTypes[1] must be one of race.started, race.ended, race.finalized, race.cancelled, webhook.test. eventTypes[2] repeats race.started. description must not hold control characters",
    ]);
    const anonymous = await refusal(client("wrong-token-0123456789abcdef").listWebhookEndpoints({}));
    expect(anonymous.code).toBe(Code.Unauthenticated);
    const ingest = await refusal(client(TEST_INGEST_TOKEN, "internal", "grpc").listWebhookEndpoints({}));
    expect(ingest.code).toBe(Code.Unauthenticated);
  });

  it("names ListWebhookDeliveries' field endpointId: empty is 400 invalid_argument, an unknown one 404 naming it", async () => {
    const empty = await fetch(`${servers.internalUrl}/topwagers.v1.WebhookService/ListWebhookDeliveries`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ endpointId: "" }),
    });
    const body = (await empty.json()) as { code: string; message: string };
    expect([empty.status, body.code, body.message]).toEqual([400, "invalid_argument", "endpointId is required"]);
    const emptyRpc = await refusal(admin.listWebhookDeliveries({ endpointId: "" }));
    expect([emptyRpc.code, emptyRpc.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)]).toEqual([
      Code.InvalidArgument,
      ["endpoint_id"],
    ]);
    const unknown = await refusal(admin.listWebhookDeliveries({ endpointId: "ep_missing" }));
    expect([unknown.code, unknown.rawMessage]).toEqual([
      Code.NotFound,
      'no webhook endpoint has the id "ep_missing" (field endpointId)',
    ]);
    const redeliver = await refusal(admin.redeliverWebhook({ deliveryId: "" }));
    expect([redeliver.code, redeliver.rawMessage]).toEqual([Code.InvalidArgument, "deliveryId is required"]);
    const test = await refusal(admin.sendTestEvent({ id: "" }));
    expect([test.code, test.rawMessage]).toEqual([Code.InvalidArgument, "id is required"]);
  });

  it("refuses loopback and metadata URLs at creation without WEBHOOK_ALLOW_PRIVATE_URLS", async () => {
    const strict = webhookAdmin(loadConfig({}).webhooks, servers.database.db);
    const cases = {
      "https://127.0.0.1/hook": "url: the host 127.0.0.1 is not a public address",
      "https://169.254.169.254/latest": "url: the host 169.254.169.254 is not a public address",
      "https://localhost/hook": "url: the host localhost is not a public address",
      [`${receiver.url}/hook`]: "url: the URL must be an https URL",
    };
    for (const [url, message] of Object.entries(cases)) {
      const result = await strict.create({
        affiliateId: "aff-int",
        url,
        eventTypes: ["webhook.test"],
        description: "",
      });
      expect(result).toEqual({ kind: "invalid", violations: [{ field: "url", message }] });
    }
  });
});

describe("on the public port (a secret key with webhooks:write)", () => {
  it("manages the key's own affiliate's endpoints only; without the scope it is PERMISSION_DENIED", async () => {
    const key = await createKey(servers.database.db, "aff-pub");
    const other = await createKey(servers.database.db, "aff-other");
    const readOnly = await createKey(servers.database.db, "aff-pub", null, {}, ["boards:read", "races:read"]);
    const mine = client(key.secret, "public", "grpc");
    const created = await mine.createWebhookEndpoint({
      affiliateId: "aff-someone-else",
      url: `${receiver.url}/pub`,
      eventTypes: ["webhook.test"],
      description: "",
    });
    expect(created.endpoint?.affiliateId).toBe("aff-pub");
    expect((await mine.listWebhookEndpoints({ affiliateId: "aff-int" })).endpoints.map((e) => e.id)).toEqual([
      created.endpoint?.id,
    ]);
    const before = receiver.received.length;
    await mine.sendTestEvent({ id: created.endpoint?.id ?? "" });
    await receiver.waitFor(before + 1);
    expect(
      new Webhook(created.secret).verify(
        receiver.received[before]?.body ?? "",
        receiver.received[before]?.headers ?? {},
      ),
    ).toMatchObject({
      type: "webhook.test",
    });
    const foreign = await refusal(client(other.secret, "public").sendTestEvent({ id: created.endpoint?.id ?? "" }));
    expect([foreign.code, foreign.findDetails(ErrorInfoSchema)[0]?.reason]).toEqual([
      Code.NotFound,
      "WEBHOOK_NOT_FOUND",
    ]);
    const denied = await refusal(client(readOnly.secret, "public").listWebhookEndpoints({}));
    expect([denied.code, denied.rawMessage, denied.findDetails(ErrorInfoSchema)[0]?.metadata]).toEqual([
      Code.PermissionDenied,
      "this API key lacks the scope webhooks:write",
      { scope: "webhooks:write" },
    ]);
    const noKey = await refusal(client("tw_sk_nothing", "public").listWebhookEndpoints({}));
    expect(noKey.code).toBe(Code.Unauthenticated);
  });
});
