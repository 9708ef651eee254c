/**
 * Managing webhook endpoints and their deliveries: the rules and the steps, shared by the
 * WebhookService (internal listener and public port) and the `webhooks` CLI, so all accept and
 * refuse the same things. Refusals are values (field violations by proto JSON name, or an unknown
 * id); the skins turn them into errors.
 *
 * `owner` restricts a call to one affiliate (by the platform's id): a secret key's own, or the
 * affiliate_id an admin named; undefined (an admin naming none) reaches every affiliate. Another affiliate's endpoint or delivery is "not found", so a key
 * learns nothing of ids that are not its own.
 */
import { randomBytes } from "node:crypto";
import type {
  StoredWebhookDelivery,
  StoredWebhookEndpoint,
  WebhookEndpointChange,
  WebhookStore,
} from "../../ports/webhooks.js";
import { idProblems } from "../../values/platform-id.js";
import type { Violation } from "../../values/violation.js";
import { isWebhookEventType, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../../values/webhook-events.js";
import { newWebhookSecret } from "./signature.js";

/** Longest rotation overlap: 30 days. */
export const MAX_WEBHOOK_OVERLAP_SECONDS = 30 * 24 * 3600;
const MAX_DESCRIPTION_LENGTH = 500;
const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 20;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

export type WebhookRefused =
  | { readonly kind: "invalid"; readonly violations: readonly Violation[] }
  | { readonly kind: "not_found"; readonly what: "endpoint" | "delivery"; readonly id: string }
  /**
   * A cap reached: the affiliate's endpoints (no `retryAfterSeconds`: delete one first), or an endpoint's manual
   * sends this minute (try again after `retryAfterSeconds`). `setting` is the variable that sets `limit`.
   */
  | {
      readonly kind: "limit";
      readonly message: string;
      readonly setting: string;
      readonly limit: number;
      readonly retryAfterSeconds?: number;
    };

/**
 * Counts one manual send (SendTestEvent, RedeliverWebhook) under a key: an endpoint's id, or manualSendTarget's key
 * of its affiliate and URL. Seconds to wait when over, else undefined.
 */
export type ManualSendCounter = (key: string) => Promise<number | undefined>;

/**
 * The key an affiliate's manual sends to one URL are counted under, whichever endpoint they go through: the URL as
 * WHATWG parses it (scheme and host lowercased, a default port dropped, dot segments resolved, percent-encoding
 * made uniform) without its fragment, which is never sent. Re-creating an endpoint, or making another to the same
 * URL, shares its budget.
 */
export function manualSendTarget(affiliateId: string, url: string): string {
  let target = url;
  try {
    const parsed = new URL(url);
    parsed.hash = "";
    target = parsed.href;
  } catch {}
  return `url ${JSON.stringify([affiliateId, target])}`;
}

export interface WebhookAdminOptions {
  readonly store: WebhookStore;
  /** The SSRF guard: why a URL may not receive webhooks, or undefined when it may. */
  readonly urlProblem: (url: string) => Promise<string | undefined>;
  /** Unix milliseconds. */
  readonly now?: () => number;
  /** Told after a delivery was made due (a test event, a redelivery): the local worker looks at once. */
  readonly onDue?: () => void;
  /** Most endpoints per affiliate (WEBHOOK_ENDPOINTS_PER_AFFILIATE); absent: no cap. */
  readonly endpointsPerAffiliate?: number;
  /** Manual sends per endpoint (WEBHOOK_MANUAL_SENDS_PER_MINUTE); absent: not counted. */
  readonly manualSends?: { readonly perMinute: number; readonly count: ManualSendCounter };
}

export interface NewEndpoint {
  readonly affiliateId: string;
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly description: string;
}

export interface EndpointUpdate {
  readonly url?: string;
  readonly description?: string;
  /** Empty or absent keeps them. */
  readonly eventTypes?: readonly string[];
  readonly enabled?: boolean;
}

type Found<T> = T | WebhookRefused;

export class WebhookAdmin {
  private readonly now: () => number;

  constructor(private readonly options: WebhookAdminOptions) {
    this.now = options.now ?? Date.now;
  }

  async create(
    request: NewEndpoint,
  ): Promise<Found<{ kind: "created"; endpoint: StoredWebhookEndpoint; secret: string }>> {
    const violations: Violation[] = idProblems("affiliateId", request.affiliateId).map((message) => ({
      field: "affiliateId",
      message,
    }));
    violations.push(...(await this.urlViolations(request.url)));
    const eventTypes = eventTypeViolations(request.eventTypes, violations);
    violations.push(...descriptionViolations(request.description));
    if (violations.length > 0) return { kind: "invalid", violations };
    const secret = newWebhookSecret();
    const endpoint = {
      id: `ep_${randomBytes(16).toString("hex")}`,
      affiliateExternalId: request.affiliateId,
      url: request.url,
      description: request.description,
      eventTypes,
      secret,
    };
    const cap = this.options.endpointsPerAffiliate;
    if (cap === undefined)
      return { kind: "created", endpoint: await this.options.store.insertEndpoint(endpoint), secret };
    const stored = await this.options.store.insertEndpointWithin(endpoint, cap);
    return stored === undefined ? endpointCapReached(cap) : { kind: "created", endpoint: stored, secret };
  }

  /**
   * The refusal of a manual send over its limit this minute, or undefined (counted): per endpoint, and per affiliate
   * and target URL (manualSendTarget), so neither re-creating an endpoint nor pointing several at one receiver
   * gives a fresh budget.
   */
  private async manualSendRefused(endpoint: StoredWebhookEndpoint): Promise<WebhookRefused | undefined> {
    const sends = this.options.manualSends;
    if (sends === undefined) return undefined;
    const [byEndpoint, byTarget] = await Promise.all([
      sends.count(endpoint.id),
      sends.count(manualSendTarget(endpoint.affiliateExternalId, endpoint.url)),
    ]);
    const refused = (what: string, wait: number): WebhookRefused => ({
      kind: "limit",
      message: `${what} ${sends.perMinute} test events and redeliveries in the last minute, the most allowed (WEBHOOK_MANUAL_SENDS_PER_MINUTE)`,
      setting: "WEBHOOK_MANUAL_SENDS_PER_MINUTE",
      limit: sends.perMinute,
      retryAfterSeconds: wait,
    });
    if (byEndpoint !== undefined) return refused("this endpoint was sent", byEndpoint);
    if (byTarget !== undefined)
      return refused("this endpoint's URL was sent (through any endpoint of the affiliate)", byTarget);
    return undefined;
  }

  /** The platform's id of the affiliate a key's caller belongs to (by its internal key). */
  async ownerOfKey(affiliateKey: number): Promise<string> {
    const owner = await this.options.store.affiliateExternalId(affiliateKey);
    // A key is made with its affiliate's row, which is never deleted.
    if (owner === undefined) throw new Error(`no affiliate has the internal key ${affiliateKey}`);
    return owner;
  }

  list(owner: string | undefined): Promise<StoredWebhookEndpoint[]> {
    return this.options.store.listEndpoints(owner);
  }

  async update(owner: string | undefined, id: string, update: EndpointUpdate): Promise<Found<StoredWebhookEndpoint>> {
    const found = await this.endpoint(owner, id);
    if ("kind" in found) return found;
    const violations: Violation[] = [];
    if (update.url !== undefined) violations.push(...(await this.urlViolations(update.url)));
    const eventTypes =
      update.eventTypes === undefined || update.eventTypes.length === 0
        ? undefined
        : eventTypeViolations(update.eventTypes, violations);
    if (update.description !== undefined) violations.push(...descriptionViolations(update.description));
    if (violations.length > 0) return { kind: "invalid", violations };
    const change: WebhookEndpointChange = {
      ...(update.url === undefined ? {} : { url: update.url }),
      ...(update.description === undefined ? {} : { description: update.description }),
      ...(eventTypes === undefined ? {} : { eventTypes }),
      ...(update.enabled === undefined
        ? {}
        : { enabled: update.enabled, ...(update.enabled ? {} : { disabledReason: "disabled by its owner" }) }),
    };
    return (await this.options.store.updateEndpoint(id, change)) ?? notFound("endpoint", id);
  }

  async delete(owner: string | undefined, id: string): Promise<Found<{ kind: "deleted" }>> {
    const found = await this.endpoint(owner, id);
    if ("kind" in found) return found;
    return (await this.options.store.deleteEndpoint(id)) ? { kind: "deleted" } : notFound("endpoint", id);
  }

  async rotate(
    owner: string | undefined,
    id: string,
    overlapSeconds: number,
  ): Promise<Found<{ kind: "rotated"; endpoint: StoredWebhookEndpoint; secret: string }>> {
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_WEBHOOK_OVERLAP_SECONDS) {
      return {
        kind: "invalid",
        violations: [
          {
            field: "overlapSeconds",
            message: `overlapSeconds must be from 0 to ${MAX_WEBHOOK_OVERLAP_SECONDS} (30 days)`,
          },
        ],
      };
    }
    const found = await this.endpoint(owner, id);
    if ("kind" in found) return found;
    const secret = newWebhookSecret();
    const endpoint = await this.options.store.rotateSecret(id, secret, Math.floor(this.now() / 1000) + overlapSeconds);
    return endpoint === undefined ? notFound("endpoint", id) : { kind: "rotated", endpoint, secret };
  }

  async sendTest(owner: string | undefined, id: string): Promise<Found<StoredWebhookDelivery>> {
    const found = await this.endpoint(owner, id);
    if ("kind" in found) return found;
    const refused = await this.manualSendRefused(found);
    if (refused !== undefined) return refused;
    const delivery = await this.options.store.sendTestEvent(id, Math.floor(this.now() / 1000), {
      endpointId: id,
      message: "A test event from topwagers: this endpoint receives webhooks.",
    });
    this.options.onDue?.();
    return delivery;
  }

  async deliveries(
    owner: string | undefined,
    endpointId: string,
    pageSize: number,
    pageToken: string,
  ): Promise<Found<{ deliveries: StoredWebhookDelivery[]; nextPageToken: string }>> {
    const violations: Violation[] = [];
    if (!Number.isInteger(pageSize) || pageSize < 0 || pageSize > MAX_PAGE_SIZE) {
      violations.push({
        field: "pageSize",
        message: `pageSize must be from 1 to ${MAX_PAGE_SIZE} (0 for ${DEFAULT_PAGE_SIZE})`,
      });
    }
    if (pageToken !== "" && !/^\d{1,20}$/.test(pageToken)) {
      violations.push({ field: "pageToken", message: "pageToken must be a next_page_token of this call" });
    }
    if (violations.length > 0) return { kind: "invalid", violations };
    const found = await this.endpoint(owner, endpointId);
    if ("kind" in found) return found;
    const size = pageSize === 0 ? DEFAULT_PAGE_SIZE : pageSize;
    const page = await this.options.store.listDeliveries(
      endpointId,
      size + 1,
      pageToken === "" ? undefined : pageToken,
    );
    const more = page.length > size;
    const deliveries = page.slice(0, size);
    return { deliveries, nextPageToken: more ? (deliveries.at(-1)?.id ?? "") : "" };
  }

  async redeliver(owner: string | undefined, deliveryId: string): Promise<Found<StoredWebhookDelivery>> {
    const delivery = await this.options.store.findDelivery(deliveryId);
    if (delivery === undefined) return notFound("delivery", deliveryId);
    const endpoint = await this.endpoint(owner, delivery.endpointId);
    if ("kind" in endpoint) return notFound("delivery", deliveryId);
    const refused = await this.manualSendRefused(endpoint);
    if (refused !== undefined) return refused;
    const again = await this.options.store.redeliver(deliveryId, this.now());
    if (again === undefined) return notFound("delivery", deliveryId);
    this.options.onDue?.();
    return again;
  }

  /** The endpoint, if it exists and belongs to `owner` (when given). */
  private async endpoint(owner: string | undefined, id: string): Promise<StoredWebhookEndpoint | WebhookRefused> {
    const endpoint = id === "" ? undefined : await this.options.store.findEndpoint(id);
    if (endpoint === undefined) return notFound("endpoint", id);
    if (owner !== undefined && endpoint.affiliateExternalId !== owner) return notFound("endpoint", id);
    return endpoint;
  }

  private async urlViolations(url: string): Promise<Violation[]> {
    if (url === "") return [{ field: "url", message: "url is required" }];
    const problem = await this.options.urlProblem(url);
    return problem === undefined ? [] : [{ field: "url", message: `url: ${problem}` }];
  }
}

/**
 * The refusal of one more endpoint for an affiliate at its cap (counted by the store in the insert's own
 * transaction, after the affiliate's row is held: racing creates never pass the cap).
 */
function endpointCapReached(cap: number): WebhookRefused {
  return {
    kind: "limit",
    message: `the affiliate has ${cap} webhook endpoints, the most allowed (WEBHOOK_ENDPOINTS_PER_AFFILIATE). Delete one first`,
    setting: "WEBHOOK_ENDPOINTS_PER_AFFILIATE",
    limit: cap,
  };
}

function notFound(what: "endpoint" | "delivery", id: string): WebhookRefused {
  return { kind: "not_found", what, id };
}

function eventTypeViolations(types: readonly string[], violations: Violation[]): WebhookEventType[] {
  if (types.length === 0) {
    violations.push({
      field: "eventTypes",
      message: `eventTypes must name at least one of ${WEBHOOK_EVENT_TYPES.join(", ")}`,
    });
    return [];
  }
  const seen = new Set<string>();
  for (const [index, type] of types.entries()) {
    if (!isWebhookEventType(type)) {
      violations.push({
        field: `eventTypes[${index}]`,
        message: `eventTypes[${index}] must be one of ${WEBHOOK_EVENT_TYPES.join(", ")}`,
      });
    } else if (seen.has(type)) {
      violations.push({ field: `eventTypes[${index}]`, message: `eventTypes[${index}] repeats ${type}` });
    }
    seen.add(type);
  }
  return types.filter(isWebhookEventType);
}

function descriptionViolations(description: string): Violation[] {
  if ([...description].length > MAX_DESCRIPTION_LENGTH) {
    return [{ field: "description", message: `description must be at most ${MAX_DESCRIPTION_LENGTH} characters` }];
  }
  if (CONTROL.test(description))
    return [{ field: "description", message: "description must not hold control characters" }];
  return [];
}
