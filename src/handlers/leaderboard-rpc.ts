/**
 * The RPC skin of the operation (Connect, gRPC and gRPC-Web): Connect has
 * decoded the message and the request gate has admitted the caller; this runs
 * the operation (leaderboard/operation.ts) and builds the response message.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  GetTopAffiliateWagersByPeriodResponseSchema,
  type TopWagersService,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { requireScope } from "../auth/scopes.js";
import { AnswerMemo } from "../cache/answer-memo.js";
import { topWagerEntries } from "../codecs/entries-message.js";
import { requestFields } from "../codecs/period-request-message.js";
import { unauthenticated } from "../errors/catalogue.js";
import { fromDomain } from "../errors/domain.js";
import type { Leaderboard, RankedUser } from "../leaderboard/leaderboard.js";
import { answerPeriodRequest, type TopWagersAnswer } from "../leaderboard/operation.js";
import { cacheControl } from "../transport/cache-control.js";
import { callerKey } from "./parts/caller-key.js";

type Answer = ReturnType<typeof create<typeof GetTopAffiliateWagersByPeriodResponseSchema>>;

export function leaderboardRpc(leaderboard: Leaderboard): ServiceImpl<typeof TopWagersService> {
  // A cache hit reuses the message built for the same cached standings and list length, as REST reuses its
  // rendered bytes: no per-call message construction or decimal parsing.
  const answers = new AnswerMemo<Answer>();
  return {
    async getTopAffiliateWagersByPeriod(request, context: HandlerContext) {
      const caller = context.values.get(callerKey);
      if (caller === undefined) throw unauthenticated();
      requireScope(caller, "boards:read");
      const fields = requestFields(request);
      let answer: TopWagersAnswer;
      try {
        answer = await answerPeriodRequest(leaderboard, caller, fields.values, fields.violations);
      } catch (reason) {
        // connect-es renders what a handler throws: the domain's errors go through the catalogue first.
        throw fromDomain(reason);
      }
      context.responseHeader.set("cache-control", cacheControl(answer.maxAgeSeconds));
      return answer.memoKey === undefined
        ? buildAnswer(answer.ranked)
        : answers.get(answer.memoKey, answer.numUsers, () => buildAnswer(answer.ranked));
    },
    // Served by handlers/watch-rpc.ts on every protocol and codec; connect-es only sees what that skin does not take.
    watchTopAffiliateWagersByPeriod() {
      throw new ConnectError(
        "WatchTopAffiliateWagersByPeriod is served over gRPC, gRPC-Web (binary or JSON) and Connect streaming",
        Code.Unimplemented,
      );
    },
  };
}

function buildAnswer(ranked: readonly RankedUser[]): Answer {
  return create(GetTopAffiliateWagersByPeriodResponseSchema, { data: topWagerEntries(ranked) });
}
