/**
 * A webhook receiver on 127.0.0.1 for tests: records every request (headers, body, when) and answers
 * what the test says, per request. Verifies nothing itself: tests verify with `standardwebhooks`. And a delivery
 * worker for such tests, and the whole bench (receiver, transport, store, endpoints) a race-event test stands on.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import { every } from "../../src/jobs/every.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { StoredWebhookEndpoint, WebhookStore } from "../../src/ports/webhooks.js";
import type { WebhookEventType } from "../../src/values/webhook-events.js";
import { DeliveryWorker, type WebhookTransport } from "../../src/webhooks/core/delivery-worker.js";
import { newWebhookSecret } from "../../src/webhooks/core/signature.js";
import { createWebhookTransport } from "../../src/webhooks/outbound/webhook-sender.js";
import { MariadbWebhookStore } from "../../src/webhooks/sql/webhooks.js";
import type { TestDatabase } from "./database.js";
import { useStarted } from "./lifecycle.js";
import { listenOnFreePort } from "./listen.js";
import { RACE_EVENT_TYPES } from "./races.js";

export interface ReceivedWebhook {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly atMs: number;
}

/** What to answer: a status (with headers and a body), or hang for `delayMs` first. */
export interface ReceiverAnswer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly delayMs?: number;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  readonly received: ReceivedWebhook[];
  /** Sets how the next requests are answered (default: 200 "ok"). */
  answer(respond: (request: ReceivedWebhook) => ReceiverAnswer): void;
  /** Resolves once `count` requests arrived (at most `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let respond: (request: ReceivedWebhook) => ReceiverAnswer = () => ({ status: 200, body: "ok" });
  const waiters = new Set<() => void>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (typeof value === "string") headers[name] = value;
      }
      const entry = {
        path: request.url ?? "",
        headers,
        body: Buffer.concat(chunks).toString("utf8"),
        atMs: Date.now(),
      };
      received.push(entry);
      for (const wake of waiters) wake();
      const answer = respond(entry);
      const send = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status, answer.headers ?? {});
        response.end(answer.body ?? "");
      };
      if (answer.delayMs === undefined) send();
      else setTimeout(send, answer.delayMs).unref();
    });
  });
  const port = await listenOnFreePort(server);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    answer(next) {
      respond = next;
    },
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline)
          throw new Error(`${received.length} webhooks arrived, not ${count}, in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
          setTimeout(wake, 50).unref();
        });
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A delivery worker as the webhook tests run it by hand (runOnce): the schedule's steps a thousand times shorter, a
 * 3 s timeout and polls every 20 ms.
 */
export function quickDeliveryWorker(
  store: WebhookStore,
  transport: WebhookTransport,
  instance: string,
): DeliveryWorker {
  return new DeliveryWorker({
    schedule: every,
    store,
    transport,
    retryScale: 0.001,
    timeoutMs: 3_000,
    pollMs: 20,
    instance,
  });
}

export interface WebhookBench {
  readonly receiver: WebhookReceiver;
  /** The instance's transport, private addresses allowed (the receiver is on 127.0.0.1). */
  readonly transport: ReturnType<typeof createWebhookTransport>;
  /** The test database's webhook store, endpoint secrets sealed with `secretKey`. */
  readonly store: MariadbWebhookStore;
  readonly secretKey: Buffer;
  /** An endpoint of `affiliate` on the receiver at /<id without "ep_">, subscribed to `eventTypes`. */
  endpoint(
    id: string,
    affiliate: string,
    eventTypes?: readonly WebhookEventType[],
    secret?: string,
  ): Promise<StoredWebhookEndpoint>;
}

/**
 * A receiver, the transport that reaches it and a store on `database`, for the enclosing describe (or file):
 * started in beforeAll (after the database's), the transport and the receiver closed in afterAll.
 */
export function useWebhookBench(database: TestDatabase): WebhookBench {
  return useStarted(
    async () => {
      const receiver = await startWebhookReceiver();
      const secretKey = randomBytes(32);
      const store = new MariadbWebhookStore(database.db.write, new SecretBox(secretKey));
      return {
        receiver,
        transport: createWebhookTransport({ allowPrivate: true, userAgent: "test" }),
        store,
        secretKey,
        endpoint: (id, affiliate, eventTypes = RACE_EVENT_TYPES, secret = newWebhookSecret()) =>
          store.insertEndpoint({
            id,
            affiliateExternalId: affiliate,
            url: `${receiver.url}/${id.replace(/^ep_/, "")}`,
            description: "",
            eventTypes,
            secret,
          }),
      } satisfies WebhookBench;
    },
    async (bench) => {
      bench.transport.close();
      await bench.receiver.close();
    },
  );
}
