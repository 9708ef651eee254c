/**
 * The RPC skin of the operation (Connect, gRPC and gRPC-Web): Connect has
 * decoded the message and the request gate has admitted the caller; this runs
 * the operation (boards/core/operation.ts) and builds the response message.
 * A request with `signed` gets the board version's signature too (./parts/board-signatures.ts: signed once per
 * version, shared with REST and the streams); one without it gets exactly the message it always got.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  GetTopAffiliateWagersByPeriodResponseSchema,
  SignedBoardSchema,
  type TopWagersService,
} from "../../../gen/topwagers/v1/top_wagers_pb.js";
import { callerKey } from "../../keys/gate/caller-key.js";
import { requireScope } from "../../keys/gate/scopes.js";
import { unauthenticated } from "../../platform/errors/catalogue.js";
import { fromDomain } from "../../platform/errors/domain.js";
import { cacheControl } from "../../platform/transport/cache-control.js";
import { boardVersion } from "../core/board-snapshot.js";
import type { Leaderboard, RankedUser } from "../core/leaderboard.js";
import { answerPeriodRequest, type TopWagersAnswer } from "../core/operation.js";
import { topWagerEntries } from "./codecs/entries-message.js";
import { requestFields } from "./codecs/period-request-message.js";
import { AnswerMemo } from "./parts/answer-memo.js";
import type { BoardSignatures, SignedBoard, SignedBoardOf } from "./parts/board-signatures.js";

type Answer = ReturnType<typeof create<typeof GetTopAffiliateWagersByPeriodResponseSchema>>;

/**
 * The unary skin. `signatures` signs the boards of requests that ask (`signed`); absent, the field is ignored.
 */
export function leaderboardRpc(
  leaderboard: Leaderboard,
  signatures?: BoardSignatures,
): ServiceImpl<typeof TopWagersService> {
  // A cache hit reuses the message built for the same cached standings and list length, as REST reuses its
  // rendered bytes: no per-call message construction or decimal parsing.
  const answers = new AnswerMemo<Answer>();
  // A signed answer's message, kept with the answer's entries (every hit of a cached answer shares them).
  const signedAnswers = new WeakMap<object, Promise<Answer>>();
  return {
    async getTopAffiliateWagersByPeriod(request, context: HandlerContext) {
      const caller = context.values.get(callerKey);
      if (caller === undefined) throw unauthenticated();
      requireScope(caller, "boards:read");
      const fields = requestFields(request);
      let answer: TopWagersAnswer;
      try {
        // A cached answer comes at once, without a promise to wait for (as on REST).
        const answering = answerPeriodRequest(leaderboard, caller, fields.values, fields.violations);
        answer = answering instanceof Promise ? await answering : answering;
      } catch (reason) {
        // connect-es renders what a handler throws: the domain's errors go through the catalogue first.
        throw fromDomain(reason);
      }
      context.responseHeader.set("cache-control", cacheControl(answer.maxAgeSeconds));
      if (request.signed === true && signatures !== undefined) {
        const board = {
          affiliateId: caller.affiliateId,
          start: Number(fields.values.startTimestamp),
          end: Number(fields.values.endTimestamp),
          rankBy: answer.rankBy,
        };
        return signedAnswer(signatures, signedAnswers, answer.ranked, board);
      }
      return answer.memoKey === undefined
        ? buildAnswer(answer.ranked)
        : answers.get(answer.memoKey, answer.numUsers, () => buildAnswer(answer.ranked));
    },
    // Served by boards/wire/watch-rpc.ts on every protocol and codec; connect-es only sees what that skin does not take.
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

/** The answer with its version's signature, built once per answer (its entries) whoever asks. */
function signedAnswer(
  signatures: BoardSignatures,
  made: WeakMap<object, Promise<Answer>>,
  ranked: readonly RankedUser[],
  board: SignedBoardOf,
): Promise<Answer> {
  let answer = made.get(ranked);
  if (answer === undefined) {
    const version = {
      key: ranked,
      ranked,
      get version() {
        return boardVersion(ranked);
      },
    };
    answer = signatures.signed(version, board).then((signed) => withSignature(buildAnswer(ranked), signed));
    made.set(ranked, answer);
    answer.catch(() => made.delete(ranked));
  }
  return answer;
}

function withSignature(answer: Answer, signed: SignedBoard | null): Answer {
  if (signed !== null)
    answer.signed = create(SignedBoardSchema, { payload: signed.payload, kid: signed.kid, jws: signed.jws });
  return answer;
}
