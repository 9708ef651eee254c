/**
 * The Connect skin of webhook management (WebhookService): messages in, WebhookAdmin calls,
 * messages or errors out. Served twice: on the internal listener, where the request gate has checked
 * the ADMIN_TOKEN and `affiliate_id` names the affiliate (empty: any), and on the public port, where
 * the gate has admitted a key and the call acts for the key's affiliate only, given the scope
 * webhooks:write. `ownerOf` is the difference.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  CreateWebhookEndpointResponseSchema,
  DeleteWebhookEndpointResponseSchema,
  ListWebhookDeliveriesResponseSchema,
  ListWebhookEndpointsResponseSchema,
  RedeliverWebhookResponseSchema,
  RotateWebhookSecretResponseSchema,
  SendTestEventResponseSchema,
  UpdateWebhookEndpointResponseSchema,
  type WebhookAttempt,
  WebhookAttemptSchema,
  type WebhookDelivery,
  WebhookDeliverySchema,
  WebhookDeliveryState,
  type WebhookEndpoint,
  WebhookEndpointSchema,
  type WebhookService,
} from "../../../gen/topwagers/v1/webhooks_pb.js";
import { callerKey } from "../../keys/gate/caller-key.js";
import { requireScope } from "../../keys/gate/scopes.js";
import { invalidArgument, ServiceError, unauthenticated } from "../../platform/errors/catalogue.js";
import { databaseCall } from "../../platform/errors/database.js";
import type { StoredWebhookDelivery, StoredWebhookEndpoint } from "../../ports/webhooks.js";
import type { WebhookAdmin, WebhookRefused } from "../core/endpoint-admin.js";

/**
 * Whose endpoints a call may touch: the affiliate's platform id, or undefined for any (an admin who
 * named none). `requested` is the request's affiliate_id. Throws to refuse the call.
 */
export type OwnerOf = (requested: string, context: HandlerContext) => Promise<string | undefined>;

/** The internal listener's owner: the affiliate_id the admin named, or any when it is empty. */
export const adminOwner: OwnerOf = async (requested) => (requested === "" ? undefined : requested);

/**
 * The public port's owner: the API key's affiliate (the request gate has set the caller), given the
 * scope webhooks:write. The request's affiliate_id is ignored.
 */
export function keyOwner(admin: WebhookAdmin): OwnerOf {
  return async (_requested, context) => {
    const caller = context.values.get(callerKey);
    if (caller === undefined) throw unauthenticated();
    requireScope(caller, "webhooks:write");
    return databaseCall(() => admin.ownerOfKey(caller.affiliateId));
  };
}

type WebhookServiceImpl = ServiceImpl<typeof WebhookService>;
type EndpointMethods = Omit<WebhookServiceImpl, keyof DeliveryMethods>;
type DeliveryMethods = Pick<WebhookServiceImpl, "sendTestEvent" | "listWebhookDeliveries" | "redeliverWebhook">;

export function webhookService(admin: WebhookAdmin, ownerOf: OwnerOf): WebhookServiceImpl {
  return { ...endpointMethods(admin, ownerOf), ...deliveryMethods(admin, ownerOf) };
}

/** The methods that manage endpoints: create, list, update, delete, rotate the secret. */
function endpointMethods(admin: WebhookAdmin, ownerOf: OwnerOf): EndpointMethods {
  return {
    async createWebhookEndpoint(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const result = await databaseCall(() =>
        admin.create({
          affiliateId: owner ?? request.affiliateId,
          url: request.url,
          eventTypes: request.eventTypes,
          description: request.description,
        }),
      );
      if (result.kind !== "created") throw refusal(result);
      return create(CreateWebhookEndpointResponseSchema, {
        endpoint: endpointMessage(result.endpoint),
        secret: result.secret,
      });
    },

    async listWebhookEndpoints(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const endpoints = await databaseCall(() => admin.list(owner));
      return create(ListWebhookEndpointsResponseSchema, { endpoints: endpoints.map(endpointMessage) });
    },

    async updateWebhookEndpoint(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const id = requiredId(request.id, "id");
      const result = await databaseCall(() =>
        admin.update(owner, id, {
          ...(request.url === undefined ? {} : { url: request.url }),
          ...(request.description === undefined ? {} : { description: request.description }),
          eventTypes: request.eventTypes,
          ...(request.enabled === undefined ? {} : { enabled: request.enabled }),
        }),
      );
      if ("kind" in result) throw refusal(result);
      return create(UpdateWebhookEndpointResponseSchema, { endpoint: endpointMessage(result) });
    },

    async deleteWebhookEndpoint(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const result = await databaseCall(() => admin.delete(owner, requiredId(request.id, "id")));
      if (result.kind !== "deleted") throw refusal(result);
      return create(DeleteWebhookEndpointResponseSchema, {});
    },

    async rotateWebhookSecret(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const id = requiredId(request.id, "id");
      const result = await databaseCall(() => admin.rotate(owner, id, request.overlapSeconds));
      if (result.kind !== "rotated") throw refusal(result);
      return create(RotateWebhookSecretResponseSchema, {
        endpoint: endpointMessage(result.endpoint),
        secret: result.secret,
      });
    },
  };
}

/** The methods about deliveries: send a test event, list deliveries, redeliver one. */
function deliveryMethods(admin: WebhookAdmin, ownerOf: OwnerOf): DeliveryMethods {
  return {
    async sendTestEvent(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const result = await databaseCall(() => admin.sendTest(owner, requiredId(request.id, "id")));
      if ("kind" in result) throw refusal(result);
      return create(SendTestEventResponseSchema, { delivery: deliveryMessage(result) });
    },

    async listWebhookDeliveries(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const endpointId = requiredId(request.endpointId, "endpointId");
      const result = await databaseCall(() => admin.deliveries(owner, endpointId, request.pageSize, request.pageToken));
      if ("kind" in result) throw refusal(result, "endpointId");
      return create(ListWebhookDeliveriesResponseSchema, {
        deliveries: result.deliveries.map(deliveryMessage),
        nextPageToken: result.nextPageToken,
      });
    },

    async redeliverWebhook(request, context) {
      const owner = await ownerOf(request.affiliateId, context);
      const result = await databaseCall(() => admin.redeliver(owner, requiredId(request.deliveryId, "deliveryId")));
      if ("kind" in result) throw refusal(result);
      return create(RedeliverWebhookResponseSchema, { delivery: deliveryMessage(result) });
    },
  };
}

function endpointMessage(endpoint: StoredWebhookEndpoint): WebhookEndpoint {
  return create(WebhookEndpointSchema, {
    id: endpoint.id,
    affiliateId: endpoint.affiliateExternalId,
    url: endpoint.url,
    description: endpoint.description,
    eventTypes: [...endpoint.eventTypes],
    enabled: endpoint.enabled,
    ...(endpoint.disabledReason === null ? {} : { disabledReason: endpoint.disabledReason }),
    ...(endpoint.disabledAt === null ? {} : { disabledAt: BigInt(endpoint.disabledAt) }),
    ...(endpoint.previousSecretExpiresAt === null
      ? {}
      : { previousSecretExpiresAt: BigInt(endpoint.previousSecretExpiresAt) }),
    createdAt: BigInt(endpoint.createdAt),
    updatedAt: BigInt(endpoint.updatedAt),
  });
}

const STATES = {
  pending: WebhookDeliveryState.PENDING,
  delivered: WebhookDeliveryState.DELIVERED,
  failed: WebhookDeliveryState.FAILED,
} as const;

function deliveryMessage(delivery: StoredWebhookDelivery): WebhookDelivery {
  const optional = <K extends string, V>(key: K, value: V | null, map: (v: V) => unknown) =>
    value === null ? {} : { [key]: map(value) };
  return create(WebhookDeliverySchema, {
    id: delivery.id,
    endpointId: delivery.endpointId,
    webhookId: delivery.messageId,
    eventType: delivery.eventType,
    state: STATES[delivery.state],
    attempts: delivery.attempts,
    ...optional("nextAttemptAtMs", delivery.state === "pending" ? delivery.nextAttemptAtMs : null, BigInt),
    ...optional("lastStatus", delivery.lastStatus, Number),
    ...optional("lastError", delivery.lastError, String),
    ...optional("deliveredAtMs", delivery.deliveredAtMs, BigInt),
    ...optional("failedAtMs", delivery.failedAtMs, BigInt),
    createdAt: BigInt(delivery.createdAt),
    attemptLog: delivery.attemptLog.map(
      (attempt): WebhookAttempt =>
        create(WebhookAttemptSchema, {
          attempt: attempt.attempt,
          startedAtMs: BigInt(attempt.startedAtMs),
          durationMs: attempt.durationMs,
          ...optional("status", attempt.status, Number),
          ...optional("error", attempt.error, String),
          ...optional("response", attempt.response, String),
        }),
    ),
  });
}

/** A cap reached: 400 failed_precondition for a count (delete one first), 429 with Retry-After for a rate. */
function limitRefusal(refused: Extract<WebhookRefused, { kind: "limit" }>): ServiceError {
  const info = { setting: refused.setting, limit: String(refused.limit) };
  return refused.retryAfterSeconds === undefined
    ? new ServiceError("LIMIT_REACHED", refused.message, { info })
    : new ServiceError("TOO_MANY_SENDS", refused.message, { info, retryAfterSeconds: refused.retryAfterSeconds });
}

/** An id the request must name: empty is a bad request (400 / invalid_argument naming the field), not a 404. */
function requiredId(id: string, field: "id" | "endpointId" | "deliveryId"): string {
  if (id === "") throw invalidArgument([{ field, message: `${field} is required` }]);
  return id;
}

/** A refusal as the catalogue's error; a missing endpoint is named by the request's field (`endpointField`). */
function refusal(refused: WebhookRefused, endpointField: "id" | "endpointId" = "id"): ServiceError {
  if (refused.kind === "invalid") return invalidArgument(refused.violations);
  if (refused.kind === "limit") return limitRefusal(refused);
  const field = refused.what === "endpoint" ? endpointField : "deliveryId";
  const message = `no webhook ${refused.what} has the id ${JSON.stringify(refused.id)}`;
  return new ServiceError("WEBHOOK_NOT_FOUND", `${message} (field ${field})`, { violations: [{ field, message }] });
}
