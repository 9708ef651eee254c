/**
 * The Connect skin of key issuance (ApiKeyService on the internal listener):
 * messages in, KeyAdmin calls, messages or errors out. The request gate has
 * already checked the ADMIN_TOKEN.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type ApiKey,
  ApiKeySchema,
  type ApiKeyService,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
  RateLimitSchema,
  RevokeApiKeyResponseSchema,
  RotateApiKeyResponseSchema,
} from "../../../gen/topwagers/v1/api_keys_pb.js";
import { invalidArgument, ServiceError } from "../../platform/errors/catalogue.js";
import { databaseCall } from "../../platform/errors/database.js";
import { rankByMessage, rankByOf } from "../../platform/wire/codecs/rank-by.js";
import type { StoredApiKey } from "../../ports/api-keys.js";
import { isRestricted } from "../../values/scopes.js";
import type { Violation } from "../../values/violation.js";
import type { KeyAdmin, Refused } from "../core/key-admin.js";

export function apiKeyService(admin: KeyAdmin): ServiceImpl<typeof ApiKeyService> {
  return {
    async createApiKey(request) {
      const violations: Violation[] = [];
      const defaultRankBy = rankByOf(request.defaultRankBy, violations, "defaultRankBy");
      if (violations.length > 0) throw invalidArgument(violations);
      const result = await databaseCall(() =>
        admin.create({
          affiliateId: request.affiliateId,
          label: request.label,
          rateLimit:
            request.rateLimit === undefined
              ? null
              : { points: request.rateLimit.points, windowSeconds: request.rateLimit.windowSeconds },
          expiresAt: request.expiresAt === undefined ? null : Number(request.expiresAt),
          publishable: request.publishable,
          allowedOrigins: request.allowedOrigins,
          defaultRankBy: defaultRankBy ?? null,
          scopes: request.scopes,
        }),
      );
      if (result.kind !== "issued") throw refusal(result);
      return create(CreateApiKeyResponseSchema, { apiKey: message(result.key), secret: result.secret });
    },

    async listApiKeys(request) {
      const keys = await databaseCall(() => admin.list(request.affiliateId));
      return create(ListApiKeysResponseSchema, { apiKeys: keys.map(message) });
    },

    async revokeApiKey(request) {
      const result = await databaseCall(() => admin.revoke(request.id));
      if (result.kind !== "revoked") throw refusal(result);
      return create(RevokeApiKeyResponseSchema, { apiKey: message(result.key) });
    },

    async rotateApiKey(request) {
      const result = await databaseCall(() => admin.rotate(request.id, request.overlapSeconds));
      if (result.kind !== "issued") throw refusal(result);
      return create(RotateApiKeyResponseSchema, { apiKey: message(result.key), secret: result.secret });
    },
  };
}

function message(key: StoredApiKey): ApiKey {
  return create(ApiKeySchema, {
    id: key.id,
    affiliateId: key.affiliateExternalId,
    label: key.label,
    createdAt: BigInt(key.createdAt),
    ...(key.expiresAt === null ? {} : { expiresAt: BigInt(key.expiresAt) }),
    ...(key.revokedAt === null ? {} : { revokedAt: BigInt(key.revokedAt) }),
    ...(key.rateLimit === null
      ? {}
      : {
          rateLimit: create(RateLimitSchema, {
            points: key.rateLimit.points,
            windowSeconds: key.rateLimit.windowSeconds,
          }),
        }),
    publishable: key.publishable,
    allowedOrigins: [...key.allowedOrigins],
    defaultRankBy: rankByMessage(key.defaultRankBy),
    // Listed only for a restricted key: empty is every scope the key's kind may have.
    scopes: isRestricted(key.scopes, key.publishable) ? [...key.scopes] : [],
  });
}

function refusal(refused: Refused): ServiceError {
  if (refused.kind === "invalid") return invalidArgument(refused.violations);
  return new ServiceError("KEY_NOT_FOUND", `no API key has the id ${JSON.stringify(refused.id)} (field id)`, {
    violations: [{ field: "id", message: `no API key has the id ${JSON.stringify(refused.id)}` }],
  });
}
