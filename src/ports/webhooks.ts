/**
 * What webhook administration (webhooks/core/endpoint-admin.ts) and the delivery worker
 * (webhooks/core/delivery-worker.ts) read and write. Secrets cross this port in clear; the adapter stores
 * them encrypted (platform/database/secret-box.ts). Times ending in `Ms` are Unix milliseconds, the
 * others Unix seconds.
 */
import type { WebhookEventType } from "../values/webhook-events.js";

export interface StoredWebhookEndpoint {
  readonly id: string;
  readonly affiliateExternalId: string;
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly WebhookEventType[];
  readonly enabled: boolean;
  /** Why the endpoint was disabled (by its owner, a 410, or 5 days of failures); null while enabled. */
  readonly disabledReason: string | null;
  readonly disabledAt: number | null;
  /** Until when the previous secret still signs beside the current one; null: no previous secret. */
  readonly previousSecretExpiresAt: number | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface NewWebhookEndpoint {
  readonly id: string;
  readonly affiliateExternalId: string;
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly WebhookEventType[];
  readonly secret: string;
}

export interface WebhookEndpointChange {
  readonly url?: string;
  readonly description?: string;
  readonly eventTypes?: readonly WebhookEventType[];
  /** true re-enables (clearing the reason and the failure streak); false disables with `disabledReason`. */
  readonly enabled?: boolean;
  readonly disabledReason?: string;
}

export type WebhookDeliveryState = "pending" | "delivered" | "failed";

export interface WebhookAttempt {
  readonly attempt: number;
  readonly startedAtMs: number;
  readonly durationMs: number;
  /** The receiver's HTTP status; null when no answer came (refused address, network error, timeout). */
  readonly status: number | null;
  readonly error: string | null;
  /** The first bytes of the receiver's answer (at most 1 KiB), as text. */
  readonly response: string | null;
}

export interface StoredWebhookDelivery {
  readonly id: string;
  readonly endpointId: string;
  readonly messageId: string;
  readonly eventType: WebhookEventType;
  readonly state: WebhookDeliveryState;
  readonly attempts: number;
  readonly nextAttemptAtMs: number | null;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
  readonly lastResponse: string | null;
  readonly deliveredAtMs: number | null;
  readonly failedAtMs: number | null;
  readonly createdAt: number;
  readonly attemptLog: readonly WebhookAttempt[];
}

/** A delivery a worker holds the lease of, with all it needs to send it. */
export interface ClaimedWebhookDelivery {
  readonly id: string;
  readonly claimToken: string;
  readonly endpointId: string;
  readonly url: string;
  readonly endpointEnabled: boolean;
  readonly disabledReason: string | null;
  /** When the endpoint's current streak of failed attempts began; null: its last attempt delivered. */
  readonly failingSinceMs: number | null;
  /** Current secret first, then the previous one while its overlap lasts. */
  readonly secrets: readonly string[];
  readonly messageId: string;
  readonly eventType: WebhookEventType;
  readonly affiliateExternalId: string;
  readonly body: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly maxAttempts: number;
}

/** What one attempt came to, as the worker records it. */
export interface WebhookAttemptOutcome {
  readonly attempt: WebhookAttempt;
  /** delivered; pending again at `nextAttemptAtMs`; failed (last attempt, or the endpoint is disabled). */
  readonly state: WebhookDeliveryState;
  readonly nextAttemptAtMs: number | null;
  /** Disable the endpoint with this reason (a 410, or failing for 5 days). */
  readonly disableEndpoint?: string;
  /** Whether this attempt failed (it starts or continues the endpoint's failure streak) or delivered. */
  readonly succeeded: boolean;
  readonly instance: string;
}

export interface WebhookStore {
  /** The platform's id of an affiliate by its internal key (a key's caller knows only the key). */
  affiliateExternalId(affiliateKey: number): Promise<string | undefined>;
  insertEndpoint(endpoint: NewWebhookEndpoint): Promise<StoredWebhookEndpoint>;
  /**
   * Inserts the endpoint unless its affiliate has `cap` endpoints already (then undefined): counted and inserted
   * as one step, so creates racing each other never pass the cap.
   */
  insertEndpointWithin(endpoint: NewWebhookEndpoint, cap: number): Promise<StoredWebhookEndpoint | undefined>;
  findEndpoint(id: string): Promise<StoredWebhookEndpoint | undefined>;
  /** Every endpoint (of one affiliate, by its external id), oldest first, then by id. */
  listEndpoints(affiliateExternalId?: string): Promise<StoredWebhookEndpoint[]>;
  /** Undefined: no such endpoint. */
  updateEndpoint(id: string, change: WebhookEndpointChange): Promise<StoredWebhookEndpoint | undefined>;
  /** Deletes the endpoint with its deliveries and their attempts; false: no such endpoint. */
  deleteEndpoint(id: string): Promise<boolean>;
  /** The new secret signs from now on; the old one beside it until `previousExpiresAt` (Unix seconds). */
  rotateSecret(id: string, secret: string, previousExpiresAt: number): Promise<StoredWebhookEndpoint | undefined>;
  /** A `webhook.test` event to one endpoint; answers the delivery. */
  sendTestEvent(endpointId: string, at: number, data: unknown): Promise<StoredWebhookDelivery>;
  /** An endpoint's deliveries, newest first, at most `limit`, older than `beforeId` when given. */
  listDeliveries(endpointId: string, limit: number, beforeId?: string): Promise<StoredWebhookDelivery[]>;
  findDelivery(id: string): Promise<StoredWebhookDelivery | undefined>;
  /** Sends a delivery again (same webhook-id): due now, one more attempt allowed. */
  redeliver(id: string, nowMs: number): Promise<StoredWebhookDelivery | undefined>;

  /**
   * Claims due deliveries for `leaseMs`: at most `limit`, at most `perEndpoint` of one endpoint
   * counting those `busyEndpoints` already has in flight on this instance, oldest due first.
   */
  claimDue(options: {
    readonly nowMs: number;
    readonly limit: number;
    readonly perEndpoint: number;
    readonly busyEndpoints: ReadonlyMap<string, number>;
    readonly leaseMs: number;
  }): Promise<ClaimedWebhookDelivery[]>;
  /** Records an attempt; false when the claim was lost (the lease expired and another instance took it). */
  recordAttempt(delivery: ClaimedWebhookDelivery, outcome: WebhookAttemptOutcome): Promise<boolean>;
  /** Records several attempts at once (one transaction); for each, false when its claim was lost. */
  recordAttempts(
    items: readonly { readonly delivery: ClaimedWebhookDelivery; readonly outcome: WebhookAttemptOutcome }[],
  ): Promise<boolean[]>;
  /** Fails a claimed delivery without an attempt (its endpoint is disabled). */
  failWithoutAttempt(delivery: ClaimedWebhookDelivery, reason: string, nowMs: number): Promise<void>;
  /** The age of the oldest due delivery (0 when none is due) and the number of disabled endpoints. */
  queueState(nowMs: number): Promise<{ oldestDueAgeMs: number; disabledEndpoints: number }>;
}
