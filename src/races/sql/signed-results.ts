/**
 * Signed final results (migration 13's race_signed_results), chained per affiliate: inside the freeze's
 * transaction the affiliate's row is locked and its last signed result read, in one statement, and the new
 * result signed at the next place with that result's SHA-256 (./race-steps.ts writeFreeze calls this). Freezes of
 * one affiliate therefore take their places one at a time; on Galera the unique (affiliate, sequence) key
 * makes a second node's freeze of the same place fail certification and retry, finding the first one.
 */
import { createHash } from "node:crypto";
import type { Pool, PoolConnection, RowDataPacket } from "mysql2/promise";
import { RetryTransaction } from "../../platform/database/transactions.js";
import type { ResultSealer, SignedResult } from "../../ports/races.js";

/**
 * Locks the affiliate's row and reads its last signed result (none: NULLs) in one round trip. The affiliate's
 * row is a constant of the join, read (and waited for) before the chain's last row is looked up, so a freeze
 * that waited for another of the same affiliate finds that one's result. Should a plan ever read the chain
 * first, the unique (affiliate, sequence) key refuses the second result at the same place (see below).
 */
const LOCK_AND_READ_CHAIN = `SELECT a.id, s.sequence, s.sha256, r.public_id
    FROM affiliates a
    LEFT JOIN race_signed_results s
      ON s.affiliate_id = a.id
     AND s.sequence = (SELECT MAX(m.sequence) FROM race_signed_results m WHERE m.affiliate_id = a.id)
    LEFT JOIN races r ON r.id = s.race_id
   WHERE a.id = ? FOR UPDATE`;

/** MariaDB's "Duplicate entry … for key …". */
const ER_DUP_ENTRY = 1062;

/** Signs and stores the result of race `raceId` (internal `raceKey`); undefined when `seal` signs nothing. */
export async function signIntoChain(
  connection: PoolConnection,
  raceKey: number,
  affiliateId: number,
  seal: ResultSealer,
): Promise<SignedResult | undefined> {
  const [rows] = await connection.query<RowDataPacket[]>(LOCK_AND_READ_CHAIN, [affiliateId]);
  const last = rows[0];
  const link =
    last === undefined || last.sequence === null
      ? { sequence: 1, previous: null }
      : {
          sequence: Number(last.sequence) + 1,
          previous: { raceId: String(last.public_id), sha256: String(last.sha256) },
        };
  const signed = await seal(link);
  if (signed === undefined) return undefined;
  const sha256 = createHash("sha256").update(signed.jws, "ascii").digest("hex");
  await connection
    .query(
      "INSERT INTO race_signed_results (race_id, affiliate_id, sequence, kid, sha256, jws) VALUES (?, ?, ?, ?, ?, ?)",
      [raceKey, affiliateId, link.sequence, signed.kid, sha256, Buffer.from(signed.jws, "ascii")],
    )
    .catch((error: unknown) => {
      // Another freeze took this place first (a stale read of the chain): start again, after it.
      if ((error as { errno?: unknown }).errno === ER_DUP_ENTRY && /ux_race_signed_results_chain/.test(String(error)))
        throw new RetryTransaction(`place ${link.sequence} of the chain of affiliate ${affiliateId} is taken`);
      throw error;
    });
  return { jws: signed.jws, kid: signed.kid, sha256 };
}

/** The race's signed result as stored at its freeze. */
export async function signedResultOf(pool: Pool, publicId: string): Promise<SignedResult | undefined> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT s.jws, s.kid, s.sha256 FROM race_signed_results s JOIN races r ON r.id = s.race_id
      WHERE r.public_id = ?`,
    [publicId],
  );
  const row = rows[0];
  if (row === undefined) return undefined;
  return { jws: Buffer.from(row.jws).toString("ascii"), kid: String(row.kid), sha256: String(row.sha256) };
}
