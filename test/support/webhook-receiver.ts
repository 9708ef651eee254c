/**
 * A webhook receiver on 127.0.0.1 for tests: records every request (headers, body, when) and answers
 * what the test says, per request. Verifies nothing itself: tests verify with `standardwebhooks`. And a delivery
 * worker for such tests.
 */
import http from "node:http";
import type { WebhookStore } from "../../src/ports/webhooks.js";
import { DeliveryWorker, type WebhookTransport } from "../../src/webhooks/delivery-worker.js";
import { listenOnFreePort } from "./listen.js";

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
  return new DeliveryWorker({ store, transport, retryScale: 0.001, timeoutMs: 3_000, pollMs: 20, instance });
}
