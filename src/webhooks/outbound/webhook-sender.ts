/**
 * One HTTP attempt of a webhook: POST the body with its headers to the checked address
 * (./address-guard.ts), with a deadline for the whole exchange, never following a redirect (a 3xx
 * is an answer like any other non-2xx), keeping only the first bytes of the answer.
 */
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import type { AttemptAnswer } from "../core/delivery-worker.js";
import { checkWebhookTarget, type WebhookTarget } from "./address-guard.js";

/** The first bytes of an answer that are kept (migration 11: VARBINARY(1024)). */
export const KEPT_RESPONSE_BYTES = 1024;

/** What one attempt came to, as the delivery worker takes it (`response`: the first bytes of the body as text). */
export type SendResult = AttemptAnswer;

export interface WebhookSender {
  send(target: WebhookTarget, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult>;
  close(): void;
}

/** A lookup that answers the checked address, whatever name is asked (Node may ask for all addresses). */
function pinnedLookup(target: WebhookTarget): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    } else callback(null, target.address, target.family);
  };
}

export function createWebhookSender(userAgent: string): WebhookSender {
  // Keep-alive agents: a receiver that takes many events does not pay a new connection (and TLS
  // handshake) per event. A pooled socket was opened to an address that passed the check.
  const agents: Agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: 8 }),
    https: new https.Agent({ keepAlive: true, maxSockets: 8 }),
  };
  return {
    send: (target, headers, body, timeoutMs) => post(agents, userAgent, { target, headers, body, timeoutMs }),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

interface Agents {
  readonly http: http.Agent;
  readonly https: https.Agent;
}

/** One POST of the body to the checked address; its result once answered, failed or out of time. */
function post(
  agents: Agents,
  userAgent: string,
  attempt: {
    readonly target: WebhookTarget;
    readonly headers: Record<string, string>;
    readonly body: string;
    readonly timeoutMs: number;
  },
): Promise<SendResult> {
  const { target, headers, timeoutMs } = attempt;
  const secure = target.url.protocol === "https:";
  const payload = Buffer.from(attempt.body, "utf8");
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = (secure ? https : http).request(target.url, {
      method: "POST",
      agent: secure ? agents.https : agents.http,
      lookup: pinnedLookup(target),
      headers: {
        ...headers,
        "content-type": "application/json",
        "content-length": String(payload.length),
        "user-agent": userAgent,
      },
    });
    const timer = setTimeout(() => {
      finish({ kind: "timeout", error: `no complete answer within ${timeoutMs} ms` });
      request.destroy();
    }, timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) => {
      finish({ kind: "network", error: `${error.code ?? "error"}: ${error.message}` });
    });
    request.on("response", (response) => readAnswer(response, finish));
    request.end(payload);
  });
}

/** Reads an answer's status, Retry-After and first bytes; the rest of a long answer is not read. */
function readAnswer(response: http.IncomingMessage, finish: (result: SendResult) => void): void {
  const chunks: Buffer[] = [];
  let kept = 0;
  const done = () => {
    const retryAfter = response.headers["retry-after"];
    finish({
      kind: "answered",
      status: response.statusCode ?? 0,
      retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      response: Buffer.concat(chunks).subarray(0, KEPT_RESPONSE_BYTES).toString("utf8"),
    });
  };
  response.on("data", (chunk: Buffer) => {
    if (kept < KEPT_RESPONSE_BYTES) {
      chunks.push(chunk);
      kept += chunk.length;
    }
    // The rest of a long answer is not wanted: stop reading and free the socket.
    if (kept >= KEPT_RESPONSE_BYTES) {
      done();
      response.destroy();
    }
  });
  response.on("end", done);
  response.on("error", () => done());
}

/** The guard and the sender as the delivery worker takes them (webhooks/core/delivery-worker.ts). */
export function createWebhookTransport(options: { readonly allowPrivate: boolean; readonly userAgent: string }) {
  const sender = createWebhookSender(options.userAgent);
  return {
    check: (url: string) => checkWebhookTarget(url, options.allowPrivate),
    send: (target: WebhookTarget, headers: Record<string, string>, body: string, timeoutMs: number) =>
      sender.send(target, headers, body, timeoutMs),
    close: () => sender.close(),
  };
}
