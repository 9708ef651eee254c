/**
 * The webhook delivery of one instance: the worker (webhooks/core/delivery-worker.ts) over the outbox
 * (webhooks/sql/webhooks.ts), sending through the SSRF guard (webhooks/outbound/address-guard.ts), counted in the app's metrics,
 * with one warning line per delivery that failed for good. Every instance runs one unless
 * WEBHOOK_DELIVERY=false; they share the work through the outbox's leases.
 */
import { hostname } from "node:os";
import type { WebhookSettings } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { isTransientDatabaseError } from "../platform/database/database-errors.js";
import { SecretBox } from "../platform/database/secret-box.js";
import { manualSendCounter } from "../platform/limits/manual-sends.js";
import type { LimiterFactory } from "../platform/limits/rate-limiter.js";
import type { Logger } from "../platform/logger.js";
import type { Metrics } from "../platform/observability/metrics.js";
import { packageInfo } from "../platform/package-info.js";
import { resealSecrets } from "../signing/sql/secret-reseal.js";
import { type DeliveryObserver, DeliveryWorker } from "../webhooks/core/delivery-worker.js";
import { WebhookAdmin } from "../webhooks/core/endpoint-admin.js";
import { checkWebhookTarget } from "../webhooks/outbound/address-guard.js";
import { createWebhookTransport } from "../webhooks/outbound/webhook-sender.js";
import { MariadbWebhookStore } from "../webhooks/sql/webhooks.js";
import { every, type Repeating } from "./every.js";

/** How often the queue gauges (oldest due delivery, disabled endpoints) are read, on every instance. */
const QUEUE_STATE_EVERY_MS = 5_000;
/** While the database stays away, the worker says so again at most this often (not at every poll). */
const OUTAGE_REMINDER_MS = 60_000;

export interface WebhookDelivery {
  readonly store: MariadbWebhookStore;
  /** Undefined when WEBHOOK_DELIVERY=false. */
  readonly worker: DeliveryWorker | undefined;
  stop(): Promise<void>;
}

/** The store the services use (endpoints, deliveries), with the secrets' key. */
export function webhookStore(settings: WebhookSettings, database: Database): MariadbWebhookStore {
  return new MariadbWebhookStore(database.write, new SecretBox(settings.secretKey, settings.previousSecretKeys));
}

/**
 * Endpoint management over the store, with the SSRF guard at creation and on a URL change, the cap on endpoints
 * per affiliate and the per-endpoint limit of manual sends (counted through `limiters`: Redis's, shared by the
 * instances, when given). `onDue`: a delivery was made due here (a test event, a redelivery), so the local
 * worker can look at once.
 */
export function webhookAdmin(
  settings: WebhookSettings,
  database: Database,
  onDue?: () => void,
  limiters?: LimiterFactory,
): WebhookAdmin {
  return new WebhookAdmin({
    store: webhookStore(settings, database),
    async urlProblem(url) {
      const check = await checkWebhookTarget(url, settings.allowPrivateUrls);
      return check.ok ? undefined : check.reason;
    },
    ...(onDue === undefined ? {} : { onDue }),
    endpointsPerAffiliate: settings.endpointsPerAffiliate,
    manualSends: {
      perMinute: settings.manualSendsPerMinute,
      count: manualSendCounter(settings.manualSendsPerMinute, limiters),
    },
  });
}

export function startWebhookDelivery(
  settings: WebhookSettings,
  database: Database,
  metrics: Metrics,
  logger: Logger,
): WebhookDelivery {
  const store = webhookStore(settings, database);
  if (settings.secretKey === undefined) {
    logger.info("WEBHOOK_SECRET_KEY is not set: webhook signing secrets are stored unencrypted (docs/webhooks.md)");
  } else {
    void resealAtStart(settings, database, logger);
  }
  // The queue gauges are read on every instance, delivering or not: "no instance delivers" shows anywhere.
  const gauges = readQueueState(store, metrics);
  if (!settings.delivery) return { store, worker: undefined, stop: () => gauges.stop() };
  const transport = createWebhookTransport({
    allowPrivate: settings.allowPrivateUrls,
    userAgent: `topwagers-webhooks/${packageInfo().version}`,
  });
  const worker = new DeliveryWorker({
    schedule: every,
    store,
    transport,
    retryScale: settings.retryScale,
    timeoutMs: settings.timeoutMs,
    pollMs: settings.pollMs,
    instance: `${hostname()}:${process.pid}`,
    observer: deliveryObserver(metrics, logger),
  });
  worker.start();
  return {
    store,
    worker,
    async stop() {
      await gauges.stop();
      await worker.stop();
      transport.close();
    },
  };
}

/**
 * Seals again under WEBHOOK_SECRET_KEY what was stored plain or under a previous key (signing/sql/secret-reseal.ts),
 * once per start, in the background; says what it did, and warns about values no key of the ring opens.
 */
async function resealAtStart(settings: WebhookSettings, database: Database, logger: Logger): Promise<void> {
  try {
    const box = new SecretBox(settings.secretKey, settings.previousSecretKeys);
    const report = await resealSecrets(database.write, box);
    if (report.resealed > 0) {
      logger.info(
        { resealed: report.resealed },
        "secrets stored plain or under a previous key sealed again under WEBHOOK_SECRET_KEY",
      );
    }
    if (report.unreadable > 0) {
      logger.warn(
        { unreadable: report.unreadable },
        "stored secrets that neither WEBHOOK_SECRET_KEY nor WEBHOOK_SECRET_KEY_PREVIOUS opens: add the key that sealed them",
      );
    }
  } catch (error) {
    logger.warn({ err: error }, "re-sealing the stored secrets failed; the next start tries again");
  }
}

/**
 * Counts every attempt and finished delivery, and logs a delivery that failed for good. A database that is away
 * (every claim fails at each poll) is one warning when it starts, a reminder a minute while it lasts, and one
 * line when the worker gets an answer again; any other failed step is one warning each.
 */
function deliveryObserver(metrics: Metrics, logger: Logger): DeliveryObserver {
  let outage: { sinceMs: number; failedSteps: number; remindedAtMs: number } | undefined;
  return {
    attempt(result) {
      metrics.webhookAttempts.inc({ result });
      if (result === "delivered") metrics.webhookDeliveries.inc({ result: "delivered" });
    },
    finalFailure(delivery, attempt, reason) {
      metrics.webhookDeliveries.inc({ result: "failed" });
      // Ids and the outcome only: never the secret, and not the body (the receiver's data).
      logger.warn(
        {
          deliveryId: delivery.id,
          webhookId: delivery.messageId,
          endpointId: delivery.endpointId,
          affiliateId: delivery.affiliateExternalId,
          eventType: delivery.eventType,
          attempts: attempt?.attempt ?? delivery.attempts,
          lastStatus: attempt?.status ?? null,
          lastError: attempt?.error ?? null,
          reason,
        },
        "webhook delivery failed for good",
      );
    },
    error(error) {
      if (!isTransientDatabaseError(error)) {
        logger.warn({ err: error }, "webhook delivery worker: a step failed; retrying at the next poll");
        return;
      }
      const now = Date.now();
      if (outage === undefined) {
        outage = { sinceMs: now, failedSteps: 1, remindedAtMs: now };
        // Nothing is lost meanwhile (docs/webhooks.md): events wait in the outbox, outcomes of attempts
        // already sent are kept and recorded once the database answers (within their lease).
        logger.warn({ err: error }, "webhook delivery worker: the database is unavailable");
        return;
      }
      outage.failedSteps += 1;
      if (now - outage.remindedAtMs >= OUTAGE_REMINDER_MS) {
        outage.remindedAtMs = now;
        logger.warn(
          { err: error, failedSteps: outage.failedSteps, sinceMs: outage.sinceMs },
          "webhook delivery worker: the database is still unavailable",
        );
      }
    },
    recovered() {
      if (outage === undefined) return;
      logger.info(
        { failedSteps: outage.failedSteps, outageMs: Date.now() - outage.sinceMs },
        "webhook delivery worker: the database answers again",
      );
      outage = undefined;
    },
  };
}

/** Reads the queue gauges (oldest due delivery, disabled endpoints) now and every few seconds. */
function readQueueState(store: MariadbWebhookStore, metrics: Metrics): Repeating {
  return every(QUEUE_STATE_EVERY_MS, async () => {
    try {
      const state = await store.queueState(Date.now());
      metrics.webhookOldestDueSeconds.set(state.oldestDueAgeMs / 1000);
      metrics.webhookDisabledEndpoints.set(state.disabledEndpoints);
    } catch {
      // The database is away: the gauges keep their last reading; readiness reports the outage.
    }
  });
}
