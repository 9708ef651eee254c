/**
 * The Connect skin of the ingest service (Connect, gRPC and gRPC-Web on the
 * internal listener). The request gate has already checked the ingest token;
 * this turns messages into ingest calls and results into answers or errors.
 * This is the one place where ingest refusals get their codes.
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  RecordWagersResponseSchema,
  UpsertUsersResponseSchema,
  VoidWagersResponseSchema,
  type WagerIngestService,
} from "../../../gen/topwagers/v1/wager_ingest_pb.js";
import { ContentionError } from "../../platform/database/transactions.js";
import { ServiceError } from "../../platform/errors/catalogue.js";
import { fromDatabase } from "../../platform/errors/database.js";
import type { Violation } from "../../values/violation.js";
import type { Invalid, WagerIngest } from "../core/wager-ingest.js";

/** How many items an error message lists before it only counts the rest (keeps grpc-message small). */
const MAX_LISTED = 50;

export function wagerIngestService(ingest: WagerIngest): ServiceImpl<typeof WagerIngestService> {
  return {
    async upsertUsers(request) {
      const result = await guard(() =>
        ingest.upsertUsers(
          request.users.map((u) => ({ id: u.id, affiliateId: u.affiliateId, username: u.username, avatar: u.avatar })),
        ),
      );
      if (result.kind === "invalid") throw invalidBatch(result, "users");
      return create(UpsertUsersResponseSchema, { upserted: result.upserted });
    },

    async recordWagers(request) {
      const result = await guard(() =>
        ingest.recordWagers(
          request.wagers.map((w) => ({
            id: w.id,
            userId: w.userId,
            amount: w.amount,
            placedAt: w.placedAt,
            weightBps: w.weightBps,
          })),
        ),
      );
      switch (result.kind) {
        case "invalid":
          throw invalidBatch(result, "wagers");
        case "unknown_users":
          throw new ServiceError(
            "UNKNOWN_USERS",
            `unknown users ${listed(result.userIds)}. Send them with UpsertUsers before their wagers. Nothing was written`,
            { violations: [{ field: "wagers", message: `unknown users ${listed(result.userIds)}` }] },
          );
        case "conflict":
          throw new ServiceError(
            "WAGER_CONFLICT",
            `wagers already recorded with different content ${listed(result.wagerIds)}. ` +
              "A wager id must never be reused. Nothing was written",
            {
              violations: [
                { field: "wagers", message: `already recorded with different content ${listed(result.wagerIds)}` },
              ],
            },
          );
        case "recorded":
          return create(RecordWagersResponseSchema, { recorded: result.recorded, duplicates: result.duplicates });
      }
    },

    async voidWagers(request) {
      const result = await guard(() => ingest.voidWagers(request.wagerIds));
      if (result.kind === "invalid") throw invalidBatch(result, "wagerIds");
      return create(VoidWagersResponseSchema, {
        voided: result.voided,
        alreadyVoided: result.alreadyVoided,
        pending: result.pending,
      });
    },
  };
}

/** Database trouble becomes a retryable answer (nothing was written); a fault of ours becomes `internal`. */
async function guard<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ContentionError) {
      throw new ServiceError(
        "CONTENTION",
        "too much concurrent contention to commit this batch. Nothing was written. Retry it",
        { cause: error },
      );
    }
    throw fromDatabase(error, "the database is unavailable right now. Nothing was written. Retry shortly");
  }
}

function invalidBatch(result: Invalid, list: "users" | "wagers" | "wagerIds"): ServiceError {
  const violations: Violation[] = [];
  if (result.batchProblem !== undefined) violations.push({ field: list, message: result.batchProblem });
  for (const item of result.items) {
    const where = `${list}[${item.index}]`;
    for (const problem of item.problems) {
      violations.push({ field: where, message: `${where} (id ${JSON.stringify(item.id)}) ${problem}` });
    }
  }
  const shown = violations.slice(0, MAX_LISTED).map((v) => v.message);
  if (violations.length > MAX_LISTED) shown.push(`and ${violations.length - MAX_LISTED} more problems`);
  return new ServiceError("INVALID_ARGUMENT", shown.join(". "), { violations });
}

function listed(ids: readonly string[]): string {
  const shown = ids.slice(0, MAX_LISTED).map((id) => JSON.stringify(id));
  if (ids.length > MAX_LISTED) shown.push(`and ${ids.length - MAX_LISTED} more`);
  return shown.join(" ");
}
