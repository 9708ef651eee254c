/**
 * Issuing and managing API keys: the rules and the steps, shared by the
 * ApiKeyService (a partner portal over RPC) and the `keys` CLI, so both accept
 * and refuse the same things. Refusals are values (field violations by proto
 * JSON name, or an unknown id); the skins turn them into errors.
 */

import type { ApiKeyStore, NewStoredKey, StoredApiKey } from "../../ports/api-keys.js";
import { DAY, HOUR } from "../../values/calendar.js";
import { idProblems } from "../../values/platform-id.js";
import { normalScopes, scopeProblems, scopesOfKind } from "../../values/scopes.js";
import type { Violation } from "../../values/violation.js";
import type { RankBy } from "../../values/weights.js";
import { generateApiKey } from "./api-key-secret.js";

/** Longest rotation overlap: 30 days. */
export const MAX_OVERLAP_SECONDS = 30 * DAY;
/** Expiry at most this far ahead (10 years); further is surely a unit mistake. */
const MAX_EXPIRY_AHEAD_SECONDS = 10 * 365 * DAY;
const MAX_LABEL_LENGTH = 200;
/** A publishable key's allowed origins: at most this many, each at most MAX_ORIGIN_LENGTH characters. */
export const MAX_ORIGINS = 20;
const MAX_ORIGIN_LENGTH = 255;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/**
 * What happened to a key: created; revoked; rotated (the new key, with the key it replaces);
 * expiry_set (the replaced key of a rotation now expires at the end of the overlap); rate_limit_set;
 * rank_by_set (the key's default ranking).
 */
export type KeyAction = "created" | "revoked" | "rotated" | "expiry_set" | "rate_limit_set" | "rank_by_set";

export interface KeyEvent {
  readonly action: KeyAction;
  readonly keyId: string;
  readonly affiliateId: string;
  /** For a rotation: the key that was replaced. */
  readonly replacedKeyId?: string;
  /** For expiry_set: when the key stops working (Unix seconds). */
  readonly expiresAt?: number;
}

export type Refused =
  | { readonly kind: "invalid"; readonly violations: readonly Violation[] }
  | { readonly kind: "not_found"; readonly id: string };

export interface Issued {
  readonly kind: "issued";
  readonly key: StoredApiKey;
  /** The key itself: shown once, never stored. */
  readonly secret: string;
  /** False when no user of the key's affiliate is known yet (a mistyped affiliate id reads nothing). */
  readonly affiliateHasUsers: boolean;
}

/** A rotation: the new key, and the replaced one as it now stands (its expiry is the end of the overlap). */
export interface Rotated extends Issued {
  readonly replaced: StoredApiKey;
}

export interface KeyAdminOptions {
  /** Unix seconds. */
  readonly now?: () => number;
  /** Called after every committed change (logs and metrics). */
  readonly onEvent?: (event: KeyEvent) => void;
  /**
   * Awaited after every committed change, with the ids of the keys it changed, before the change is
   * answered: this instance's key set reads them at once, so a new key works here immediately.
   */
  readonly afterChange?: (keyIds: readonly string[]) => Promise<void>;
}

/** A key to create, as asked: the stored key's options (ports/api-keys.ts) before they are checked. */
export interface NewKey extends Pick<NewStoredKey, "expiresAt" | "publishable" | "allowedOrigins" | "defaultRankBy"> {
  readonly affiliateId: string;
  readonly label?: string;
  readonly rateLimit?: { readonly points: number; readonly windowSeconds: number } | null;
  /**
   * What the key may do (values/scopes.ts SCOPES); none named: every scope its kind may have. A
   * publishable key may have only read scopes.
   */
  readonly scopes?: readonly string[];
}

export class KeyAdmin {
  private readonly now: () => number;

  constructor(
    /** Where keys are kept (keys/sql/key-stores.ts on MariaDB). */
    private readonly store: ApiKeyStore,
    private readonly options: KeyAdminOptions = {},
  ) {
    this.now = options.now ?? (() => Math.floor(Date.now() / 1000));
  }

  async create(input: NewKey): Promise<Issued | Refused> {
    const violations = [
      ...idProblems("affiliateId", input.affiliateId).map((message) => ({ field: "affiliateId", message })),
      ...labelProblems(input.label ?? ""),
      ...rateLimitProblems(input.rateLimit ?? null),
      ...(input.expiresAt === undefined || input.expiresAt === null ? [] : this.expiryProblems(input.expiresAt)),
      ...originProblems(input.publishable === true, input.allowedOrigins ?? []),
      ...scopeProblems("scopes", input.scopes ?? [], input.publishable === true),
    ];
    if (violations.length > 0) return { kind: "invalid", violations };
    const publishable = input.publishable === true;
    const generated = generateApiKey(publishable ? "publishable" : "secret");
    const key = await this.store.insert({
      id: generated.id,
      hash: generated.hash,
      affiliateExternalId: input.affiliateId,
      label: input.label ?? "",
      rateLimit: input.rateLimit ?? null,
      expiresAt: input.expiresAt ?? null,
      publishable,
      allowedOrigins: publishable ? [...new Set(input.allowedOrigins)] : [],
      defaultRankBy: input.defaultRankBy ?? null,
      scopes:
        input.scopes === undefined || input.scopes.length === 0
          ? scopesOfKind(publishable)
          : normalScopes(input.scopes, publishable),
    });
    await this.changed([key.id], [{ action: "created", keyId: key.id, affiliateId: key.affiliateExternalId }]);
    const hasUsers = await this.store.affiliateHasUsers(input.affiliateId);
    return { kind: "issued", key, secret: generated.secret, affiliateHasUsers: hasUsers };
  }

  list(affiliateId?: string): Promise<StoredApiKey[]> {
    return this.store.list(affiliateId);
  }

  /** Revokes a key; revoking again changes nothing and answers the key as it is. */
  async revoke(id: string): Promise<{ kind: "revoked"; key: StoredApiKey } | Refused> {
    if (id === "") return { kind: "invalid", violations: [{ field: "id", message: "id is required" }] };
    if (!(await this.store.revoke(id))) return { kind: "not_found", id };
    const key = await this.store.findById(id);
    if (key === undefined) return { kind: "not_found", id };
    await this.changed([id], [{ action: "revoked", keyId: key.id, affiliateId: key.affiliateExternalId }]);
    return { kind: "revoked", key };
  }

  /** Gives a key its own rate limit, or (null) the service default again. */
  async setRateLimit(
    id: string,
    rateLimit: { readonly points: number; readonly windowSeconds: number } | null,
  ): Promise<{ kind: "updated"; key: StoredApiKey } | Refused> {
    const violations: Violation[] = [
      ...(id === "" ? [{ field: "id", message: "id is required" }] : []),
      ...rateLimitProblems(rateLimit),
    ];
    if (violations.length > 0) return { kind: "invalid", violations };
    if (!(await this.store.setRateLimit(id, rateLimit))) return { kind: "not_found", id };
    const key = await this.store.findById(id);
    if (key === undefined) return { kind: "not_found", id };
    await this.changed([id], [{ action: "rate_limit_set", keyId: id, affiliateId: key.affiliateExternalId }]);
    return { kind: "updated", key };
  }

  /**
   * Sets how a key's boards rank when a request does not say, or (null) removes the default; the
   * request's own rankBy always wins.
   */
  async setRankBy(id: string, rankBy: RankBy | null): Promise<{ kind: "updated"; key: StoredApiKey } | Refused> {
    if (id === "") return { kind: "invalid", violations: [{ field: "id", message: "id is required" }] };
    if (!(await this.store.setRankBy(id, rankBy))) return { kind: "not_found", id };
    const key = await this.store.findById(id);
    if (key === undefined) return { kind: "not_found", id };
    await this.changed([id], [{ action: "rank_by_set", keyId: id, affiliateId: key.affiliateExternalId }]);
    return { kind: "updated", key };
  }

  /** After a commit: this instance's key set first (so the answer holds here at once), then the events. */
  private async changed(keyIds: readonly string[], events: readonly KeyEvent[]): Promise<void> {
    await this.options.afterChange?.(keyIds);
    for (const event of events) this.options.onEvent?.(event);
  }

  /**
   * A new key of the same affiliate, label, limit, kind, origins and scopes; the old one keeps working for
   * `overlapSeconds` (0 to 30 days) and is refused from then on.
   */
  async rotate(id: string, overlapSeconds: number): Promise<Rotated | Refused> {
    const violations: Violation[] = [];
    if (id === "") violations.push({ field: "id", message: "id is required" });
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP_SECONDS) {
      violations.push({
        field: "overlapSeconds",
        message: `overlapSeconds must be 0 to ${MAX_OVERLAP_SECONDS} (30 days)`,
      });
    }
    if (violations.length > 0) return { kind: "invalid", violations };
    const old = await this.store.findById(id);
    if (old === undefined) return { kind: "not_found", id };
    const generated = generateApiKey(old.publishable ? "publishable" : "secret");
    const rotated = await this.store.rotate(id, generated, this.now() + overlapSeconds);
    if (rotated === undefined) return { kind: "not_found", id };
    const affiliateId = rotated.created.affiliateExternalId;
    await this.changed(
      [id, rotated.created.id],
      [
        { action: "rotated", keyId: rotated.created.id, affiliateId, replacedKeyId: id },
        ...(rotated.old.expiresAt === null || rotated.old.revokedAt !== null
          ? []
          : [{ action: "expiry_set" as const, keyId: id, affiliateId, expiresAt: rotated.old.expiresAt }]),
      ],
    );
    const hasUsers = await this.store.affiliateHasUsers(affiliateId);
    return {
      kind: "issued",
      key: rotated.created,
      secret: generated.secret,
      replaced: rotated.old,
      affiliateHasUsers: hasUsers,
    };
  }

  private expiryProblems(expiresAt: number): Violation[] {
    const now = this.now();
    if (!Number.isInteger(expiresAt) || expiresAt <= now) {
      return [{ field: "expiresAt", message: "expiresAt must lie in the future (Unix seconds)" }];
    }
    if (expiresAt > now + MAX_EXPIRY_AHEAD_SECONDS) {
      return [{ field: "expiresAt", message: "expiresAt must be within 10 years (Unix seconds, not milliseconds)" }];
    }
    return [];
  }
}

function labelProblems(label: string): Violation[] {
  const problems: Violation[] = [];
  if ([...label].length > MAX_LABEL_LENGTH) {
    problems.push({ field: "label", message: `label must be at most ${MAX_LABEL_LENGTH} characters` });
  }
  if (CONTROL.test(label)) problems.push({ field: "label", message: "label must not contain control characters" });
  return problems;
}

/**
 * A publishable key takes 0 to MAX_ORIGINS exact origins (scheme http or https, host, optional port,
 * nothing else); with none it is an overlay-only key (`GET /board` is served by this service, no CORS
 * needed). A secret key takes none (it never goes to a browser).
 */
export function originProblems(publishable: boolean, origins: readonly string[]): Violation[] {
  if (!publishable) {
    return origins.length === 0
      ? []
      : [{ field: "allowedOrigins", message: "allowedOrigins are only for a publishable key (set publishable)" }];
  }
  if (origins.length > MAX_ORIGINS) {
    return [{ field: "allowedOrigins", message: `at most ${MAX_ORIGINS} allowed origins per key` }];
  }
  const problems: Violation[] = [];
  origins.forEach((origin, index) => {
    const problem = originProblem(origin);
    if (problem !== undefined) problems.push({ field: `allowedOrigins[${index}]`, message: problem });
  });
  return problems;
}

function originProblem(origin: string): string | undefined {
  const shape = "an origin is scheme, host and optional port, e.g. https://board.example.com";
  if (origin.length > MAX_ORIGIN_LENGTH) return `origin must be at most ${MAX_ORIGIN_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return `"${origin}" is not an origin (${shape})`;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `"${origin}" must use http or https (${shape})`;
  if (url.origin !== origin) {
    return `"${origin}" is not an exact origin; write it as ${url.origin} (no path, query, user or default port, host in lower case)`;
  }
  return undefined;
}

function rateLimitProblems(limit: { points: number; windowSeconds: number } | null): Violation[] {
  if (limit === null) return [];
  const problems: Violation[] = [];
  if (!Number.isInteger(limit.points) || limit.points < 1 || limit.points > 1_000_000_000) {
    problems.push({ field: "rateLimit.points", message: "rateLimit.points must be 1 to 1000000000" });
  }
  if (!Number.isInteger(limit.windowSeconds) || limit.windowSeconds < 1 || limit.windowSeconds > DAY) {
    problems.push({ field: "rateLimit.windowSeconds", message: `rateLimit.windowSeconds must be 1 to ${DAY}` });
  }
  return problems;
}

/**
 * A duration as operators write it: a whole number with a unit, s, m, h, d or w ("90d", "12h",
 * "3600s"). Returns seconds, or undefined when the text is not one.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})([smhdw])$/.exec(text.trim());
  if (match === null) return undefined;
  const unit = { s: 1, m: 60, h: HOUR, d: DAY, w: 7 * DAY }[match[2] as "s" | "m" | "h" | "d" | "w"];
  return Number(match[1]) * unit;
}
