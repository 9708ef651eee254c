/**
 * Every kind of key kept sealed at rest by the secret box (../../platform/database/secret-box.ts) that signs
 * something, in one list (issue 47, item 4): the results' keys (`signing_keys`), the live key (`live_signing_keys`)
 * and the results log's note key (`log_signing_keys`, migration 21). A new kind of sealed key gets a row here, and
 * the checks below cover it: whether the active key of each kind opens with a box (a server's readiness and its
 * `topwagers_signing_failing` gauge, the CLI before it makes or activates a key), and which key of a box's ring
 * sealed one.
 */
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { errnoOf } from "../../platform/database/database-errors.js";
import type { SecretBox } from "../../platform/database/secret-box.js";
import { unopenableSecret } from "../../values/sealed-secret.js";
import { SIGNING_KEY_TABLES } from "./signing-keys.js";

/** What a sealed key signs: final results, live versions, or the results log's checkpoints. */
export type SealedKeyPurpose = "result" | "live" | "log";

export interface SealedKeyKind {
  readonly purpose: SealedKeyPurpose;
  readonly table: string;
  /** The key id's column. */
  readonly id: string;
  /** The additional data a key of this kind is sealed with (its row: a key copied elsewhere does not open). */
  readonly sealedAs: (id: string) => string;
}

export const SEALED_KEY_KINDS: readonly SealedKeyKind[] = [
  {
    purpose: "result",
    table: SIGNING_KEY_TABLES.result.table,
    id: "kid",
    sealedAs: SIGNING_KEY_TABLES.result.sealedAs,
  },
  { purpose: "live", table: SIGNING_KEY_TABLES.live.table, id: "kid", sealedAs: SIGNING_KEY_TABLES.live.sealedAs },
  // As ../../results-log/sql/log-keys.ts sealedLogKeyAs seals it (a feature's sql/ is its own: not imported).
  { purpose: "log", table: "log_signing_keys", id: "key_id", sealedAs: (id) => `log-signing-key:${id}` },
];

/** An active key the box cannot open, and why (the error's message names the real cause). */
export interface UnopenedKey {
  readonly purpose: SealedKeyPurpose;
  readonly id: string;
  readonly reason: string;
  readonly message: string;
}

const ER_NO_SUCH_TABLE = 1146;

/** The active keys (one per kind at most) with their sealed halves; none of a kind whose table does not exist yet. */
async function activeSealedKeys(
  pool: Pool | PoolConnection,
): Promise<{ kind: SealedKeyKind; id: string; sealed: Buffer }[]> {
  const found: { kind: SealedKeyKind; id: string; sealed: Buffer }[] = [];
  for (const kind of SEALED_KEY_KINDS) {
    try {
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT ${kind.id} AS id, private_sealed AS sealed FROM ${kind.table} WHERE active = 1`,
      );
      for (const row of rows) found.push({ kind, id: String(row.id), sealed: row.sealed as Buffer });
    } catch (error) {
      if (errnoOf(error) !== ER_NO_SUCH_TABLE) throw error;
    }
  }
  return found;
}

/** The active keys `box` cannot open (`skip`: purposes whose key is not the database's, e.g. SIGNING_KEY_FILE's). */
export async function unopenedActiveKeys(
  pool: Pool | PoolConnection,
  box: SecretBox,
  skip: readonly SealedKeyPurpose[] = [],
): Promise<UnopenedKey[]> {
  const unopened: UnopenedKey[] = [];
  for (const { kind, id, sealed } of await activeSealedKeys(pool)) {
    if (skip.includes(kind.purpose)) continue;
    try {
      box.open(kind.sealedAs(id), sealed);
    } catch (error) {
      const why = unopenableSecret(error);
      if (why === undefined) throw error;
      unopened.push({ purpose: kind.purpose, id, reason: why.reason, message: why.message });
    }
  }
  return unopened;
}

/**
 * The fingerprint of the key of `box`'s ring that sealed the active key `id` of `kind`'s table, "" when it is
 * stored plain (any instance opens it), undefined when no key of the ring opens it.
 */
export async function sealedWith(
  pool: Pool | PoolConnection,
  box: SecretBox,
  purpose: SealedKeyPurpose,
  id: string,
): Promise<string | undefined> {
  const kind = SEALED_KEY_KINDS.find((k) => k.purpose === purpose);
  if (kind === undefined) return undefined;
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT private_sealed AS sealed FROM ${kind.table} WHERE ${kind.id} = ?`,
    [id],
  );
  const sealed = rows[0]?.sealed as Buffer | undefined;
  return sealed === undefined ? undefined : box.openerOf(kind.sealedAs(id), sealed);
}
