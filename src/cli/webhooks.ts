/**
 * `topwagers webhooks …`: create, list, test, deliveries and redeliver, on the configured database,
 * through the same rules as WebhookService (src/webhooks/core/endpoint-admin.ts), with the operator's
 * WEBHOOK_* settings (the SSRF guard, the secrets' key). The running servers send what this queues.
 */
import { webhookAdmin } from "../jobs/webhook-delivery.js";
import { loadConfig } from "../platform/config.js";
import type { StoredWebhookDelivery, StoredWebhookEndpoint } from "../ports/webhooks.js";
import type { WebhookAdmin, WebhookRefused } from "../webhooks/core/endpoint-admin.js";
import { alignColumns } from "./columns.js";
import { DataError, isoSeconds, parseCommandOptions, printJson, UsageError, withDatabase } from "./common.js";

/** The options of the webhooks commands; a misspelt or incomplete option is a usage error (exit 2). */
function parseWebhooksOptions(args: string[]) {
  return parseCommandOptions(args, {
    affiliate: { type: "string" },
    url: { type: "string" },
    event: { type: "string", multiple: true },
    description: { type: "string" },
    "page-size": { type: "string" },
    "page-token": { type: "string" },
    json: { type: "boolean", default: false },
  });
}

/** The option that sets each field, for messages. */
const OPTION_OF: Readonly<Record<string, string>> = {
  affiliateId: "--affiliate",
  url: "--url",
  eventTypes: "--event",
  description: "--description",
  pageSize: "--page-size",
  pageToken: "--page-token",
};

/** Refused by the rules (exit 2) or by the data (no such id: exit 1), else the outcome. */
function outcome<T>(result: T | WebhookRefused): T {
  if (typeof result === "object" && result !== null && "kind" in result) {
    const refused = result as WebhookRefused;
    if (refused.kind === "invalid") {
      throw new UsageError(
        refused.violations
          .map((v) => {
            const option = v.field === undefined ? undefined : OPTION_OF[v.field.replace(/\[\d+\]$/, "")];
            return option === undefined ? v.message : `${option}: ${v.message}`;
          })
          .join("\n       "),
      );
    }
    if (refused.kind === "not_found") {
      throw new DataError(`no webhook ${refused.what} with id ${refused.id} (see: topwagers webhooks list)`);
    }
    if (refused.kind === "limit") throw new DataError(refused.message);
  }
  return result as T;
}

function withWebhooks<T>(work: (admin: WebhookAdmin) => Promise<T>): Promise<T> {
  const config = loadConfig();
  return withDatabase((db) => work(webhookAdmin(config.webhooks, db)), { config });
}

/**
 * The `--json` shapes of an endpoint and of a delivery. They list their fields alike but are two records' documented
 * shapes (field names chosen for the CLI, the secret left out): each changes with its own record, so they stay apart.
 */
function endpointJson(endpoint: StoredWebhookEndpoint) {
  return {
    id: endpoint.id,
    affiliateId: endpoint.affiliateExternalId,
    url: endpoint.url,
    eventTypes: endpoint.eventTypes,
    description: endpoint.description,
    enabled: endpoint.enabled,
    disabledReason: endpoint.disabledReason,
    createdAt: endpoint.createdAt,
  };
}

function deliveryJson(delivery: StoredWebhookDelivery) {
  return {
    id: delivery.id,
    endpointId: delivery.endpointId,
    webhookId: delivery.messageId,
    eventType: delivery.eventType,
    state: delivery.state,
    attempts: delivery.attempts,
    nextAttemptAtMs: delivery.state === "pending" ? delivery.nextAttemptAtMs : null,
    lastStatus: delivery.lastStatus,
    lastError: delivery.lastError,
    deliveredAtMs: delivery.deliveredAtMs,
    failedAtMs: delivery.failedAtMs,
    attemptLog: delivery.attemptLog,
  };
}

const isoMs = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString().replace(/\.\d+Z$/, "Z"));

async function create(values: ReturnType<typeof parseWebhooksOptions>["values"]): Promise<void> {
  if (values.affiliate === undefined || values.url === undefined || values.event === undefined) {
    throw new UsageError(
      "webhooks create needs --affiliate <affiliateId>, --url <https URL> and --event <type> (repeatable)",
    );
  }
  const created = outcome(
    await withWebhooks((admin) =>
      admin.create({
        affiliateId: values.affiliate ?? "",
        url: values.url ?? "",
        eventTypes: values.event ?? [],
        description: values.description ?? "",
      }),
    ),
  );
  if (values.json) {
    printJson({ ...endpointJson(created.endpoint), secret: created.secret });
    return;
  }
  process.stdout.write(
    `Created webhook endpoint ${created.endpoint.id} for affiliate ${created.endpoint.affiliateExternalId}: ` +
      `${created.endpoint.eventTypes.join(", ")} to ${created.endpoint.url}\n` +
      `Signing secret: ${created.secret}\n` +
      "This is the only time the secret is shown. Verify deliveries with it (docs/webhooks.md).\n",
  );
}

async function list(values: ReturnType<typeof parseWebhooksOptions>["values"]): Promise<void> {
  const endpoints = await withWebhooks((admin) => admin.list(values.affiliate));
  if (values.json) {
    printJson(endpoints.map(endpointJson));
    return;
  }
  if (endpoints.length === 0) {
    process.stdout.write(
      "No webhook endpoints yet. Create one with: topwagers webhooks create --affiliate … --url … --event …\n",
    );
    return;
  }
  process.stdout.write(
    alignColumns([
      ["ID", "AFFILIATE", "STATUS", "EVENTS", "URL"],
      ...endpoints.map((e) => [
        e.id,
        e.affiliateExternalId,
        e.enabled ? "enabled" : `disabled (${e.disabledReason ?? "no reason"})`,
        e.eventTypes.join(","),
        e.url,
      ]),
    ]),
  );
}

async function deliveries(
  endpointId: string,
  values: ReturnType<typeof parseWebhooksOptions>["values"],
): Promise<void> {
  const size = values["page-size"] === undefined ? 20 : Number(values["page-size"]);
  const page = outcome(
    await withWebhooks((admin) => admin.deliveries(undefined, endpointId, size, values["page-token"] ?? "")),
  );
  if (values.json) {
    printJson({ deliveries: page.deliveries.map(deliveryJson), nextPageToken: page.nextPageToken });
    return;
  }
  if (page.deliveries.length === 0) {
    process.stdout.write(`No deliveries to ${endpointId} yet.\n`);
    return;
  }
  process.stdout.write(
    alignColumns([
      ["ID", "WEBHOOK-ID", "EVENT", "STATE", "ATTEMPTS", "LAST", "NEXT", "CREATED"],
      ...page.deliveries.map((d) => [
        d.id,
        d.messageId,
        d.eventType,
        d.state,
        String(d.attempts),
        d.lastStatus === null ? (d.lastError ?? "-") : String(d.lastStatus),
        d.state === "pending" ? isoMs(d.nextAttemptAtMs) : "-",
        isoSeconds(d.createdAt),
      ]),
    ]),
  );
  if (page.nextPageToken !== "") {
    process.stdout.write(`Older: topwagers webhooks deliveries ${endpointId} --page-token ${page.nextPageToken}\n`);
  }
}

export async function webhooksCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseWebhooksOptions(rest);
  switch (sub) {
    case "create":
      return create(values);
    case "list":
      return list(values);
    case "test": {
      const id = positionals[0];
      if (id === undefined) throw new UsageError("webhooks test needs the endpoint id (see: topwagers webhooks list)");
      const delivery = outcome(await withWebhooks((admin) => admin.sendTest(undefined, id)));
      if (values.json) return printJson(deliveryJson(delivery));
      process.stdout.write(
        `Queued a webhook.test (delivery ${delivery.id}, webhook-id ${delivery.messageId}); a running server sends it.\n`,
      );
      return;
    }
    case "deliveries": {
      const id = positionals[0];
      if (id === undefined)
        throw new UsageError("webhooks deliveries needs the endpoint id (see: topwagers webhooks list)");
      return deliveries(id, values);
    }
    case "redeliver": {
      const id = positionals[0];
      if (id === undefined)
        throw new UsageError("webhooks redeliver needs the delivery id (see: topwagers webhooks deliveries)");
      const delivery = outcome(await withWebhooks((admin) => admin.redeliver(undefined, id)));
      if (values.json) return printJson(deliveryJson(delivery));
      process.stdout.write(
        `Delivery ${delivery.id} is due again with the same webhook-id ${delivery.messageId}; a running server sends it.\n`,
      );
      return;
    }
    default:
      throw new UsageError(sub === undefined ? "webhooks needs a subcommand" : `unknown webhooks subcommand "${sub}"`);
  }
}
