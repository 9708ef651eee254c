/**
 * `topwagers keys …`: create (optionally restricted to --scope …), rotate, list, revoke, set-rate-limit and set-rank-by. Every
 * change goes through KeyAdmin (src/keys/core/key-admin.ts), with the same rules and
 * events as the ApiKeyService; the change row it writes reaches every running
 * server within a second, and a new key works on every server from its first call.
 */
import { KeyAdmin, parseDuration, type Refused } from "../keys/core/key-admin.js";
import { mariadbApiKeys } from "../keys/sql/key-stores.js";
import type { StoredApiKey } from "../ports/api-keys.js";
import { isRestricted } from "../values/scopes.js";
import { isRankBy, type RankBy } from "../values/weights.js";
import { alignColumns } from "./columns.js";
import { DataError, isoSeconds, parseCommandOptions, printJson, UsageError, withDatabase } from "./common.js";
import { RUN } from "./usage.js";

/** "100/60s" → { points: 100, windowSeconds: 60 } */
export function parseRateLimit(text: string): { points: number; windowSeconds: number } {
  const match = /^(\d{1,9})\/(\d{1,6})s$/.exec(text.trim());
  if (match === null || Number(match[1]) < 1 || Number(match[2]) < 1) {
    throw new UsageError(`--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "${text}"`);
  }
  return { points: Number(match[1]), windowSeconds: Number(match[2]) };
}

/** The options of the keys commands; a misspelt or incomplete option is a usage error (exit 2). */
function parseKeysOptions(args: string[]) {
  return parseCommandOptions(args, {
    affiliate: { type: "string" },
    label: { type: "string" },
    "rate-limit": { type: "string" },
    "expires-in": { type: "string" },
    publishable: { type: "boolean", default: false },
    origin: { type: "string", multiple: true },
    overlap: { type: "string" },
    "rank-by": { type: "string" },
    scope: { type: "string", multiple: true },
    json: { type: "boolean", default: false },
  });
}

/** A key change refused by the rules (exit 2) or by the data (no such key: exit 1), else its outcome. */
function keyChange<T extends { kind: string }>(result: T | Refused): Exclude<T, Refused> {
  if (result.kind === "invalid") {
    throw new UsageError((result as Extract<Refused, { kind: "invalid" }>).violations.map((v) => v.message).join(". "));
  }
  if (result.kind === "not_found") {
    throw new DataError(
      `no key with id ${(result as Extract<Refused, { kind: "not_found" }>).id} (see: ${RUN} keys list)`,
    );
  }
  return result as Exclude<T, Refused>;
}

/** "wagered" or "weighted" (and "default" where it may be removed: null). */
function rankByOption(text: string, allowDefault: boolean): RankBy | null {
  if (isRankBy(text)) return text;
  if (allowDefault && text === "default") return null;
  throw new UsageError(
    `the ranking must be wagered or weighted${allowDefault ? " (or default: no default)" : ""}, got "${text}"`,
  );
}

function durationOption(name: string, text: string): number {
  const seconds = parseDuration(text);
  if (seconds === undefined) {
    throw new UsageError(`--${name} must be a whole number with a unit s, m, h, d or w (e.g. 90d), got "${text}"`);
  }
  return seconds;
}

/** Runs one KeyAdmin call on the configured database. */
function withKeys<T>(work: (admin: KeyAdmin) => Promise<T>): Promise<T> {
  return withDatabase((db) => work(new KeyAdmin(mariadbApiKeys(db.write))));
}

const SHOWN_ONCE = "This is the only time the key is shown: only its SHA-256 hash is stored.";

function warnIfNoUsers(affiliateId: string, hasUsers: boolean): void {
  if (hasUsers) return;
  process.stderr.write(
    `warning: no users of affiliate ${affiliateId} are known yet, so the key reads an empty leaderboard ` +
      "until the platform sends some (check the affiliate id for a typo).\n",
  );
}

async function create(values: ReturnType<typeof parseKeysOptions>["values"]): Promise<void> {
  const affiliate = values.affiliate;
  if (affiliate === undefined || affiliate.length < 1 || affiliate.length > 64) {
    throw new UsageError("keys create needs --affiliate <affiliateId> (1 to 64 characters)");
  }
  const origins = values.origin ?? [];
  if (!values.publishable && origins.length > 0) {
    throw new UsageError("--origin is only for a publishable key (add --publishable)");
  }
  const rateLimit = values["rate-limit"] === undefined ? null : parseRateLimit(values["rate-limit"]);
  const expiresIn = values["expires-in"] === undefined ? undefined : durationOption("expires-in", values["expires-in"]);
  const defaultRankBy = values["rank-by"] === undefined ? null : rankByOption(values["rank-by"], false);
  const issued = keyChange(
    await withKeys((admin) =>
      admin.create({
        affiliateId: affiliate,
        label: values.label ?? "",
        rateLimit,
        expiresAt: expiresIn === undefined ? null : Math.floor(Date.now() / 1000) + expiresIn,
        publishable: values.publishable,
        allowedOrigins: origins,
        defaultRankBy,
        scopes: values.scope ?? [],
      }),
    ),
  );
  warnIfNoUsers(affiliate, issued.affiliateHasUsers);
  const stored = issued.key;
  if (values.json) {
    printJson({
      id: stored.id,
      key: issued.secret,
      affiliateId: affiliate,
      ...(stored.expiresAt === null ? {} : { expiresAt: stored.expiresAt }),
      ...(stored.publishable ? { publishable: true, allowedOrigins: stored.allowedOrigins } : {}),
      ...(stored.defaultRankBy === null ? {} : { defaultRankBy: stored.defaultRankBy }),
      ...(isRestricted(stored.scopes, stored.publishable) ? { scopes: stored.scopes } : {}),
    });
    return;
  }
  const kind = stored.publishable ? "publishable key" : "key";
  const notes = [
    ...(stored.publishable
      ? [
          stored.allowedOrigins.length === 0
            ? "for the overlay only: no --origin, so no other site's page can read with it"
            : `usable from ${stored.allowedOrigins.join(", ")}`,
        ]
      : []),
    ...(stored.expiresAt === null ? [] : [`expires ${isoSeconds(stored.expiresAt)}`]),
    ...(stored.defaultRankBy === null ? [] : [`boards ranked by ${stored.defaultRankBy} by default`]),
    ...(isRestricted(stored.scopes, stored.publishable) ? [`scopes ${scopesCell(stored.scopes)}`] : []),
  ];
  process.stdout.write(
    `Created ${kind} ${stored.id} for affiliate ${affiliate}${notes.length === 0 ? "" : ` (${notes.join("; ")})`}.\n\n  ${issued.secret}\n\n${SHOWN_ONCE}\n`,
  );
}

async function rotate(id: string | undefined, values: ReturnType<typeof parseKeysOptions>["values"]): Promise<void> {
  if (id === undefined) throw new UsageError(`keys rotate needs the key id (see: ${RUN} keys list)`);
  const overlap = values.overlap === undefined ? 0 : durationOption("overlap", values.overlap);
  const issued = keyChange(await withKeys((admin) => admin.rotate(id, overlap)));
  // The old key's real end: the overlap, or its own earlier expiry or revocation, whichever comes first.
  const old = issued.replaced;
  if (values.json) {
    printJson({
      id: issued.key.id,
      key: issued.secret,
      affiliateId: issued.key.affiliateExternalId,
      replaces: id,
      oldKeyExpiresAt: old.expiresAt,
      oldKeyRevokedAt: old.revokedAt,
    });
    return;
  }
  const oldEnd =
    old.revokedAt !== null
      ? `${id} was already revoked.`
      : `${id} keeps working until ${isoSeconds(old.expiresAt ?? 0)}; running servers refuse it within a second after that.`;
  process.stdout.write(
    `Created key ${issued.key.id} for affiliate ${issued.key.affiliateExternalId}, replacing ${id}.\n\n  ${issued.secret}\n\n` +
      `${SHOWN_ONCE}\n${oldEnd}\n`,
  );
}

/** A key's scopes in one cell: comma-separated, or "none". */
function scopesCell(scopes: readonly string[]): string {
  return scopes.length === 0 ? "none" : scopes.join(",");
}

function statusOf(key: StoredApiKey, now: number): string {
  if (key.revokedAt !== null) return "revoked";
  return key.expiresAt !== null && key.expiresAt <= now ? "expired" : "active";
}

async function list(json: boolean): Promise<void> {
  const keys = await withKeys((admin) => admin.list());
  const now = Math.floor(Date.now() / 1000);
  if (json) {
    printJson(
      keys.map((k) => ({
        id: k.id,
        affiliateId: k.affiliateExternalId,
        kind: k.publishable ? "publishable" : "secret",
        allowedOrigins: k.allowedOrigins,
        status: statusOf(k, now),
        label: k.label,
        createdAt: k.createdAt,
        revokedAt: k.revokedAt,
        expiresAt: k.expiresAt,
        rateLimit: k.rateLimit,
        defaultRankBy: k.defaultRankBy,
        // Only for a restricted key: absent, the key has every scope its kind may have.
        ...(isRestricted(k.scopes, k.publishable) ? { scopes: k.scopes } : {}),
      })),
    );
    return;
  }
  if (keys.length === 0) {
    process.stdout.write(`No keys yet. Create one with: ${RUN} keys create --affiliate <affiliateId>\n`);
    return;
  }
  // The SCOPES column is shown once some key is restricted; other keys have every scope of their kind.
  const restricted = keys.some((k) => isRestricted(k.scopes, k.publishable));
  const header = [
    "ID",
    "AFFILIATE",
    "KIND",
    "STATUS",
    "RATE LIMIT",
    "RANK BY",
    "CREATED",
    "EXPIRES",
    "ORIGINS",
    ...(restricted ? ["SCOPES"] : []),
    "LABEL",
  ];
  const rows = keys.map((k) => [
    k.id,
    k.affiliateExternalId,
    k.publishable ? "publishable" : "secret",
    statusOf(k, now),
    k.rateLimit === null ? "default" : `${k.rateLimit.points}/${k.rateLimit.windowSeconds}s`,
    k.defaultRankBy ?? "default",
    isoSeconds(k.createdAt),
    k.expiresAt === null ? "never" : isoSeconds(k.expiresAt),
    k.allowedOrigins.length === 0 ? "-" : k.allowedOrigins.join(","),
    ...(restricted ? [scopesCell(k.scopes)] : []),
    k.label,
  ]);
  process.stdout.write(alignColumns([header, ...rows]));
}

export async function keysCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseKeysOptions(rest);
  switch (sub) {
    case "create":
      return create(values);
    case "rotate":
      if (positionals.length > 1) throw new UsageError("keys rotate takes one key id");
      return rotate(positionals[0], values);
    case "list":
      return list(values.json);
    case "revoke": {
      const id = positionals[0];
      if (id === undefined) throw new UsageError(`keys revoke needs the key id (see: ${RUN} keys list)`);
      keyChange(await withKeys((admin) => admin.revoke(id)));
      process.stdout.write(`Revoked ${id}. Running servers refuse it within 1 second.\n`);
      return;
    }
    case "set-rate-limit": {
      const [id, limitText] = positionals;
      if (id === undefined || limitText === undefined) {
        throw new UsageError("keys set-rate-limit needs <keyId> and <points>/<seconds>s or default");
      }
      const rateLimit = limitText === "default" ? null : parseRateLimit(limitText);
      keyChange(await withKeys((admin) => admin.setRateLimit(id, rateLimit)));
      process.stdout.write(`Rate limit of ${id} is now ${limitText}. Running servers apply it within 1 second.\n`);
      return;
    }
    case "set-rank-by": {
      const [id, rankByText] = positionals;
      if (id === undefined || rankByText === undefined || positionals.length > 2) {
        throw new UsageError("keys set-rank-by needs <keyId> and wagered, weighted or default");
      }
      const rankBy = rankByOption(rankByText, true);
      keyChange(await withKeys((admin) => admin.setRankBy(id, rankBy)));
      process.stdout.write(
        rankBy === null
          ? `Boards of ${id} rank by total wagered unless a request asks otherwise (no default). Running servers apply it within 1 second.\n`
          : `Boards of ${id} now rank by ${rankBy} unless a request asks otherwise. Running servers apply it within 1 second.\n`,
      );
      return;
    }
    default:
      throw new UsageError(`unknown keys command "${sub ?? ""}"`);
  }
}
