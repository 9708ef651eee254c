/**
 * The delivery worker: every instance runs one. It claims due deliveries from the outbox (leases,
 * see webhooks/sql/webhook-claims.ts), sends each as one signed attempt and records the outcome:
 *
 * - 2xx: delivered. 410 Gone: the endpoint is disabled and the delivery failed.
 * - anything else (another status, a redirect, a refused address, a network error, the timeout):
 *   tried again after the next step of the schedule (webhooks/core/schedule.ts), never sooner than the
 *   receiver's Retry-After; after the last attempt the delivery is failed (kept for replay) and one
 *   warning line says so. An endpoint whose attempts all failed for 5 days (scaled) is disabled.
 *
 * Per endpoint at most `perEndpoint` attempts are in flight on an instance, and due deliveries are
 * taken oldest first, which is the order of their events (a retry waiting for its time does not
 * hold the events behind it back: a receiver must order by the payload, not by arrival).
 */

import type { Repeating, Schedule } from "../../ports/schedule.js";
import type {
  ClaimedWebhookDelivery,
  WebhookAttempt,
  WebhookAttemptOutcome,
  WebhookStore,
} from "../../ports/webhooks.js";
import { FAILING_ENDPOINT_DISABLE_MS, retryAfterMs, retryDelayMs } from "./schedule.js";
import { webhookHeaders } from "./signature.js";

/** What one HTTP attempt came to (webhooks/outbound/webhook-sender.ts answers this shape). */
export type AttemptAnswer =
  | {
      readonly kind: "answered";
      readonly status: number;
      readonly retryAfter: string | undefined;
      readonly response: string;
    }
  | { readonly kind: "timeout" | "network"; readonly error: string };

/** Checks a URL (the SSRF guard) and sends to the address it checked. */
export interface WebhookTransport<Target = unknown> {
  check(
    url: string,
  ): Promise<{ readonly ok: true; readonly target: Target } | { readonly ok: false; readonly reason: string }>;
  send(target: Target, headers: Record<string, string>, body: string, timeoutMs: number): Promise<AttemptAnswer>;
}

/** How an attempt ended, for metrics: delivered, retry (pending again), failed (no attempts left), disabled (410 or 5 days), lost (the lease ran out first). */
export type AttemptResult = "delivered" | "retry" | "failed" | "disabled" | "lost";

export interface DeliveryObserver {
  attempt?(result: AttemptResult, durationMs: number, delivery: ClaimedWebhookDelivery): void;
  /** A delivery failed for good: after its last attempt, by a 410, or its endpoint was disabled. */
  finalFailure?(delivery: ClaimedWebhookDelivery, attempt: WebhookAttempt | undefined, reason: string): void;
  /** A step failed (a claim, recording outcomes, failing a delivery); the worker goes on at its next poll. */
  error?(error: unknown): void;
  /** A claim or a record succeeded again after a step failed (the database answers again). */
  recovered?(): void;
}

export interface DeliveryWorkerOptions {
  readonly store: WebhookStore;
  readonly transport: WebhookTransport;
  /** Multiplies the retry schedule and the 5-day disable rule (1 in production). */
  readonly retryScale: number;
  /** Deadline of one attempt (15 s in production). */
  readonly timeoutMs: number;
  /** How often due deliveries are looked for when there was nothing to do. */
  readonly pollMs: number;
  /** Attempts in flight on this instance, and per endpoint. */
  readonly maxInFlight?: number;
  readonly perEndpoint?: number;
  /** The claim's lease; default twice the timeout and 5 s (see `leaseMs`). */
  readonly leaseMs?: number;
  /** Who sends (recorded with each attempt). */
  readonly instance: string;
  readonly observer?: DeliveryObserver;
  readonly now?: () => number;
  /** The loop the claims run on (jobs/every.ts). */
  readonly schedule: Schedule;
}

/** Outcomes recorded together: at most this many, waiting at most RECORD_DELAY_MS for company. */
const RECORD_BATCH = 32;
const RECORD_DELAY_MS = 5;
/** Outcomes that could not be recorded (the database is away) are tried again this often while their lease lasts. */
const RECORD_RETRY_MS = 500;

interface PendingRecord {
  readonly delivery: ClaimedWebhookDelivery;
  readonly outcome: WebhookAttemptOutcome;
  /** When the claim's lease runs out: past it the delivery may be another claim's, and the outcome is dropped. */
  readonly leaseEndsAtMs: number;
  readonly resolve: (recorded: boolean) => void;
  readonly reject: (error: unknown) => void;
}

export class DeliveryWorker {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly busy = new Map<string, number>();
  /** The last claim took as many as it could: more may be due, so a finished attempt wakes the loop. */
  private saturated = false;
  private loop: Repeating | undefined;
  private readonly maxInFlight: number;
  private readonly perEndpoint: number;
  private readonly now: () => number;
  /** Outcomes waiting to be recorded in one transaction (one commit for many attempts). */
  private records: PendingRecord[] = [];
  private recordTimer: ReturnType<typeof setTimeout> | undefined;
  /** A step failed and nothing has succeeded since (told to the observer once it does). */
  private failing = false;
  /** stop() was called: outcomes that cannot be recorded are no longer kept for another try. */
  private stopping = false;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.maxInFlight = options.maxInFlight ?? 32;
    this.perEndpoint = options.perEndpoint ?? 4;
    this.now = options.now ?? Date.now;
  }

  /**
   * The lease of a claim: twice the attempt deadline and 5 s. Long enough that a live worker
   * records its attempt well before it runs out; short enough that a dead worker's deliveries are
   * sent by another instance soon after.
   */
  get leaseMs(): number {
    return this.options.leaseMs ?? 2 * this.options.timeoutMs + 5_000;
  }

  start(): void {
    if (this.loop !== undefined) return;
    this.stopping = false;
    this.loop = this.options.schedule(this.options.pollMs, () => this.poll());
  }

  /** Looks for due deliveries now (after a local commit of an event, or in tests). */
  wake(): void {
    this.loop?.wake();
  }

  /** Stops claiming and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    const loop = this.loop;
    this.loop = undefined;
    await loop?.stop();
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Claims what is due now and sends it, waiting for every attempt; the number claimed. For tests and tools. */
  async runOnce(): Promise<number> {
    const claimed = await this.claim();
    await Promise.allSettled([...this.inFlight.values()]);
    return claimed;
  }

  /** One step of the loop: a claim; how long until the next one. */
  private async poll(): Promise<number> {
    let claimed = 0;
    try {
      claimed = await this.claim();
    } catch (error) {
      this.failed(error);
    }
    // A full claim: more may be due; go again as soon as an attempt ends (it wakes the loop).
    // Some claimed: look again at once. Nothing due: wait a poll (or a wake-up).
    const full = this.inFlight.size >= this.maxInFlight;
    return claimed > 0 && !full ? 0 : this.options.pollMs;
  }

  private async claim(): Promise<number> {
    const free = this.maxInFlight - this.inFlight.size;
    if (free <= 0) return 0;
    const nowMs = this.now();
    const claimed = await this.options.store.claimDue({
      nowMs,
      limit: free,
      perEndpoint: this.perEndpoint,
      busyEndpoints: this.busy,
      leaseMs: this.leaseMs,
    });
    this.succeeded();
    this.saturated = claimed.length === free;
    for (const delivery of claimed) {
      this.busy.set(delivery.endpointId, (this.busy.get(delivery.endpointId) ?? 0) + 1);
      const work = this.deliver(delivery, nowMs + this.leaseMs)
        .catch((error: unknown) => this.failed(error))
        .finally(() => {
          this.inFlight.delete(delivery.id);
          const left = (this.busy.get(delivery.endpointId) ?? 1) - 1;
          if (left <= 0) this.busy.delete(delivery.endpointId);
          else this.busy.set(delivery.endpointId, left);
          if (this.saturated) this.wake();
        });
      this.inFlight.set(delivery.id, work);
    }
    return claimed.length;
  }

  private failed(error: unknown): void {
    this.failing = true;
    this.options.observer?.error?.(error);
  }

  private succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.options.observer?.recovered?.();
  }

  private async deliver(delivery: ClaimedWebhookDelivery, leaseEndsAtMs: number): Promise<void> {
    const { store, observer } = this.options;
    if (!delivery.endpointEnabled) {
      const reason = `endpoint disabled: ${delivery.disabledReason ?? "no reason given"}`;
      await store.failWithoutAttempt(delivery, reason, this.now());
      observer?.finalFailure?.(delivery, undefined, reason);
      return;
    }
    const startedAtMs = this.now();
    const answer = await this.attempt(delivery, startedAtMs);
    const durationMs = Math.max(0, this.now() - startedAtMs);
    const number = delivery.attempts + 1;
    const attempt: WebhookAttempt = {
      attempt: number,
      startedAtMs,
      durationMs,
      status: answer.kind === "answered" ? answer.status : null,
      error: answer.kind === "answered" ? null : answer.error,
      response: answer.kind === "answered" ? answer.response : null,
    };
    const outcome = this.outcome(delivery, attempt, answer, startedAtMs + durationMs);
    const recorded = await this.record(delivery, outcome, leaseEndsAtMs);
    const result: AttemptResult = !recorded
      ? "lost"
      : outcome.state === "delivered"
        ? "delivered"
        : outcome.disableEndpoint !== undefined
          ? "disabled"
          : outcome.state === "failed"
            ? "failed"
            : "retry";
    observer?.attempt?.(result, durationMs, delivery);
    if (recorded && outcome.state === "failed") {
      observer?.finalFailure?.(delivery, attempt, outcome.disableEndpoint ?? `no attempt left after ${number}`);
    }
  }

  private record(
    delivery: ClaimedWebhookDelivery,
    outcome: WebhookAttemptOutcome,
    leaseEndsAtMs: number,
  ): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.records.push({ delivery, outcome, leaseEndsAtMs, resolve, reject });
      if (this.records.length >= RECORD_BATCH) this.flushRecords();
      else this.recordTimer ??= setTimeout(() => this.flushRecords(), RECORD_DELAY_MS);
    });
  }

  private flushRecords(): void {
    clearTimeout(this.recordTimer);
    this.recordTimer = undefined;
    const batch = this.records;
    this.records = [];
    if (batch.length === 0) return;
    this.options.store.recordAttempts(batch.map(({ delivery, outcome }) => ({ delivery, outcome }))).then(
      (recorded) => {
        this.succeeded();
        for (const [index, item] of batch.entries()) item.resolve(recorded[index] === true);
      },
      (error: unknown) => this.recordFailed(batch, error),
    );
  }

  /**
   * Outcomes that could not be recorded (the database is away, or the answer to the commit was lost) are kept
   * and tried again every RECORD_RETRY_MS while their lease lasts, until stop(): an attempt that reached
   * the receiver is then recorded once the database is back, instead of being sent again after the lease. A
   * retry after a commit that did happen records nothing twice: the claim's token is gone and the outcome
   * counts as lost. Past its lease an outcome is dropped (the delivery is due again; its log shows the attempt
   * as unknown).
   */
  private recordFailed(batch: readonly PendingRecord[], error: unknown): void {
    const retryAt = this.now() + RECORD_RETRY_MS;
    const kept = batch.filter((item) => !this.stopping && item.leaseEndsAtMs > retryAt);
    // A dropped outcome's delivery reports the error itself (deliver's catch); kept ones report it here.
    for (const item of batch) if (!kept.includes(item)) item.reject(error);
    if (kept.length === 0) return;
    this.failed(error);
    setTimeout(() => {
      this.records.push(...kept);
      this.flushRecords();
    }, RECORD_RETRY_MS);
  }

  private async attempt(delivery: ClaimedWebhookDelivery, startedAtMs: number): Promise<AttemptAnswer> {
    const { transport, timeoutMs } = this.options;
    // Checked before every attempt: the name may resolve elsewhere than when the endpoint was made.
    const check = await transport.check(delivery.url);
    if (!check.ok) return { kind: "network", error: `refused: ${check.reason}` };
    const headers = webhookHeaders(delivery.secrets, delivery.messageId, Math.floor(startedAtMs / 1000), delivery.body);
    return transport.send(check.target, headers, delivery.body, timeoutMs);
  }

  private outcome(
    delivery: ClaimedWebhookDelivery,
    attempt: WebhookAttempt,
    answer: AttemptAnswer,
    endedAtMs: number,
  ): WebhookAttemptOutcome {
    const base = { attempt, instance: this.options.instance };
    if (answer.kind === "answered" && answer.status >= 200 && answer.status < 300) {
      return { ...base, state: "delivered", nextAttemptAtMs: null, succeeded: true };
    }
    if (answer.kind === "answered" && answer.status === 410) {
      const reason = `the receiver answered 410 Gone on ${new Date(endedAtMs).toISOString()}`;
      return { ...base, state: "failed", nextAttemptAtMs: null, succeeded: false, disableEndpoint: reason };
    }
    const since = delivery.failingSinceMs ?? attempt.startedAtMs;
    if (endedAtMs - since >= FAILING_ENDPOINT_DISABLE_MS * this.options.retryScale) {
      const reason = `every attempt failed since ${new Date(since).toISOString()} (5 days)`;
      return { ...base, state: "failed", nextAttemptAtMs: null, succeeded: false, disableEndpoint: reason };
    }
    const delay =
      attempt.attempt < delivery.maxAttempts ? retryDelayMs(attempt.attempt, this.options.retryScale) : undefined;
    if (delay === undefined) return { ...base, state: "failed", nextAttemptAtMs: null, succeeded: false };
    const asked = answer.kind === "answered" ? retryAfterMs(answer.retryAfter, endedAtMs) : undefined;
    return {
      ...base,
      state: "pending",
      nextAttemptAtMs: endedAtMs + Math.max(delay, asked ?? 0),
      succeeded: false,
    };
  }
}
