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

/** Answers built for cached standings are kept this many at most (oldest dropped first). */
const MAX_BUILT_ANSWERS = 2_000;

type Answer = ReturnType<typeof create<typeof GetTopAffiliateWagersByPeriodResponseSchema>>;

export function topWagersService(leaderboard: Leaderboard): ServiceImpl<typeof TopWagersService> {
  // A cache hit reuses the message built for the same cached standings and list length, as REST reuses its
  // rendered bytes: no per-call message construction or decimal parsing (messages are never mutated).
  const built = new Map<string, Answer>();
  const answerFor = (standings: Awaited<ReturnType<Leaderboard["topWagersForPeriod"]>>, numUsers: number) => {
    if (standings.cacheKey === undefined) return buildAnswer(standings.ranked);
    const key = `${standings.cacheKey}:${numUsers}`;
    let answer = built.get(key);
    if (answer === undefined) {
      answer = buildAnswer(standings.ranked);
      built.set(key, answer);
      if (built.size > MAX_BUILT_ANSWERS) {
        const oldest = built.keys().next();
        if (oldest.done !== true) built.delete(oldest.value);
      }
    }
    return answer;
  };
  return {
    async getTopAffiliateWagersByPeriod(request, context: HandlerContext) {
      const caller = context.values.get(callerKey);
      if (caller === undefined) throw unauthenticated();
      const validation = periodFromRequest(request);
      if (!validation.ok) throw invalidArgument(validation.violations);
      const standings = await leaderboard.topWagersForPeriod(caller.affiliateId, validation.query);
      context.responseHeader.set("cache-control", freshness(standings.maxAgeSeconds));
      return answerFor(standings, validation.query.numUsers);
    },
  };
}

function buildAnswer(ranked: Awaited<ReturnType<Leaderboard["topWagersForPeriod"]>>["ranked"]): Answer {
  return create(GetTopAffiliateWagersByPeriodResponseSchema, {
    data: ranked.map((user) =>
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
}
