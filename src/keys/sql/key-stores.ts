/**
 * The MariaDB adapters of the key ports (src/ports/api-keys.ts): the key statements (./api-keys.ts)
 * bound to a pool, for the key rules and for the in-memory key set.
 */
import type { Pool } from "mysql2/promise";
import type { ApiKeyStore, KeyStore } from "../../ports/api-keys.js";
import {
  affiliateHasUsers,
  findApiKeyById,
  findApiKeysByIds,
  insertApiKey,
  listApiKeys,
  listUsableApiKeys,
  revokeApiKey,
  rotateApiKey,
  setApiKeyRankBy,
  setApiKeyRateLimit,
} from "./api-keys.js";

export function mariadbApiKeys(pool: Pool): ApiKeyStore {
  return {
    insert: (key) => insertApiKey(pool, key),
    findById: (id) => findApiKeyById(pool, id),
    list: (affiliateExternalId) => listApiKeys(pool, affiliateExternalId),
    revoke: (id) => revokeApiKey(pool, id),
    setRateLimit: (id, rateLimit) => setApiKeyRateLimit(pool, id, rateLimit),
    setRankBy: (id, rankBy) => setApiKeyRankBy(pool, id, rankBy),
    rotate: (oldId, fresh, oldExpiresAt) => rotateApiKey(pool, oldId, fresh, oldExpiresAt),
    affiliateHasUsers: (affiliateExternalId) => affiliateHasUsers(pool, affiliateExternalId),
  };
}

/** What the in-memory key set reads (keys/core/key-set.ts). */
export function mariadbKeyRecords(pool: Pool): KeyStore {
  return {
    usable: (nowSeconds) => listUsableApiKeys(pool, nowSeconds),
    byIds: (ids) => findApiKeysByIds(pool, ids),
  };
}
