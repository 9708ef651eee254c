/**
 * The Connect skin of the operation (Connect, gRPC and gRPC-Web). The request
 * gate has already admitted the caller; this validates, queries and renders.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { createContextKey } from "@connectrpc/connect";
import {
  GetTopAffiliateWagersByPeriodResponseSchema,
  TopWagerEntrySchema,
  type TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import type { Caller } from "../auth/authenticator.js";
import { invalidArgument, unauthenticated } from "../errors.js";
import { periodFromRequest } from "../leaderboard/period-request.js";
import type { Leaderboard } from "../leaderboard/top-wagers.js";
import { freshness } from "./freshness.js";

/** Set by the request gate once the key is authenticated and counted. */
export const callerKey = createContextKey<Caller | undefined>(undefined, { description: "authenticated caller" });

export function topWagersService(leaderboard: Leaderboard): ServiceImpl<typeof TopWagersService> {
  return {
    async getTopAffiliateWagersByPeriod(request, context: HandlerContext) {
      const caller = context.values.get(callerKey);
      if (caller === undefined) throw unauthenticated();
      const validation = periodFromRequest(request);
      if (!validation.ok) throw invalidArgument(validation.violations);
      const standings = await leaderboard.topWagersForPeriod(caller.affiliateId, validation.query);
      context.responseHeader.set("cache-control", freshness(standings.maxAgeSeconds));
      return create(GetTopAffiliateWagersByPeriodResponseSchema, {
        data: standings.ranked.map((user) =>
          create(TopWagerEntrySchema, {
            username: user.username,
            avatar: user.avatar,
            totalWagered: Number(user.totalWagered),
            totalWageredDecimal: user.totalWagered,
            userId: user.userId,
            rank: user.rank,
          }),
        ),
      });
    },
  };
}
