/**
 * Issuing and managing API keys: the rules and the steps, shared by the
 * ApiKeyService (a partner portal over RPC) and the `keys` CLI, so both accept
 * and refuse the same things. Refusals are values (field violations by proto
 * JSON name, or an unknown id); the skins turn them into errors.
 */
import type { Pool } from "mysql2/promise";
import type { Violation } from "../errors.js";
import { idProblems } from "../ingest/validation.js";
import { DAY, HOUR } from "../leaderboard/calendar.js";
import {
  findApiKeyById,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  type StoredApiKey,
} from "../storage/api-keys.js";
import { generateApiKey } from "./api-key-secret.js";

/** Longest rotation overlap: 30 days. */
export const MAX_OVERLAP_SECONDS = 30 * DAY;
/** Expiry at most this far ahead (10 years); further is surely a unit mistake. */
const MAX_EXPIRY_AHEAD_SECONDS = 10 * 365 * DAY;
const MAX_LABEL_LENGTH = 200;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this rejects
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

export type KeyAction = "created" | "revoked" | "rotated" | "expiry_set";

export interface KeyEvent {
  readonly action: KeyAction;
  readonly keyId: string;
  readonly affiliateId: string;
  /** For a rotation: the key that was replaced. */
  readonly replacedKeyId?: string;
}

export type Refused =
  | { readonly kind: "invalid"; readonly violations: readonly Violation[] }
  | { readonly kind: "not_found"; readonly id: string };

export interface Issued {
  readonly kind: "issued";
  readonly key: StoredApiKey;
  /** The key itself: shown once, never stored. */
  readonly secret: string;
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
}

export interface NewKey {
  readonly affiliateId: string;
  readonly label?: string;
  readonly rateLimit?: { readonly points: number; readonly windowSeconds: number } | null;
  /** Unix seconds; must lie in the future. */
  readonly expiresAt?: number | null;
}

export class KeyAdmin {
  private readonly now: () => number;

  constructor(
    private readonly pool: Pool,
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
    ];
    if (violations.length > 0) return { kind: "invalid", violations };
    const generated = generateApiKey();
    const key = await insertApiKey(this.pool, {
      id: generated.id,
      hash: generated.hash,
      affiliateExternalId: input.affiliateId,
      label: input.label ?? "",
      rateLimit: input.rateLimit ?? null,
      expiresAt: input.expiresAt ?? null,
    });
    this.options.onEvent?.({ action: "created", keyId: key.id, affiliateId: key.affiliateExternalId });
    return { kind: "issued", key, secret: generated.secret };
  }

  list(affiliateId?: string): Promise<StoredApiKey[]> {
    return listApiKeys(this.pool, affiliateId);
  }

  /** Revokes a key; revoking again changes nothing and answers the key as it is. */
  async revoke(id: string): Promise<{ kind: "revoked"; key: StoredApiKey } | Refused> {
    if (id === "") return { kind: "invalid", violations: [{ field: "id", message: "id is required" }] };
    if (!(await revokeApiKey(this.pool, id))) return { kind: "not_found", id };
    const key = await findApiKeyById(this.pool, id);
    if (key === undefined) return { kind: "not_found", id };
    this.options.onEvent?.({ action: "revoked", keyId: key.id, affiliateId: key.affiliateExternalId });
    return { kind: "revoked", key };
  }

  /**
   * A new key of the same affiliate, label and limit; the old one keeps working for
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
    const generated = generateApiKey();
    const rotated = await rotateApiKey(this.pool, id, generated, this.now() + overlapSeconds);
    if (rotated === undefined) return { kind: "not_found", id };
    this.options.onEvent?.({
      action: "rotated",
      keyId: rotated.created.id,
      affiliateId: rotated.created.affiliateExternalId,
      replacedKeyId: id,
    });
    return { kind: "issued", key: rotated.created, secret: generated.secret, replaced: rotated.old };
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
