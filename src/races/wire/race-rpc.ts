/**
 * The RPC skin of races (topwagers.v1.RaceService over Connect, gRPC and gRPC-Web): messages in
 * (races/wire/codecs/race-message.ts), `Races` calls (races/core/races.ts), messages or catalogue errors out
 * (parts/race-answers.ts).
 *
 * The same service runs on both listeners; only who the call acts for differs (a `RaceCaller`): on
 * the public port the API key's affiliate (`affiliate_id` in the request is ignored), with the scope
 * `races:read` for reads and `races:write` for changes; on the internal listener, behind the
 * ADMIN_TOKEN, the affiliate the request names.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  CancelRaceResponseSchema,
  CreateRaceResponseSchema,
  DeleteRaceResponseSchema,
  GetRaceResponseSchema,
  ListRacesResponseSchema,
  type RaceService,
  UpdateRaceResponseSchema,
  type WatchRaceResponse,
  WatchRaceResponseSchema,
} from "../../../gen/topwagers/v1/races_pb.js";
import { liveError, revokedKey, type StreamSlots, shuttingDown } from "../../boards/wire/parts/live-streams.js";
import { callerKey } from "../../keys/gate/caller-key.js";
import { invalidArgument, ServiceError, unauthenticated } from "../../platform/errors/catalogue.js";
import { callClientAddress } from "../../platform/observability/call-observation.js";
import { ADMIN_ACTOR, type RaceActor } from "../../ports/race-history.js";
import { NO_AFFILIATE } from "../../ports/races.js";
import type { Violation } from "../../values/violation.js";
import { RaceNotWatchable, type RaceViewer, type RaceWatch } from "../core/race-watch.js";
import type { Races, RaceView } from "../core/races.js";
import { raceHistoryMessage } from "./codecs/race-history.js";
import { raceEntries, raceFieldsOf, raceMessage, racePatchOf, raceStatesOf } from "./codecs/race-message.js";
import { answer, guard, type RaceAccess, requireRaceScope } from "./parts/race-answers.js";

/**
 * Who a race call acts for: the affiliate's internal key, or a thrown catalogue error (no key, a
 * missing scope, no `affiliate_id` on the internal listener). `affiliateId` is the request's field;
 * `creates`: the call is CreateRace, the only one that may make the named affiliate exist.
 */
export type RaceCaller = (
  context: HandlerContext,
  access: RaceAccess,
  affiliateId: string,
  creates?: boolean,
) => Promise<number>;

/**
 * The public port: the API key's affiliate (the request gate has set the caller), with the scope the
 * call needs. The request's `affiliate_id` is ignored.
 */
export const keyAffiliate: RaceCaller = async (context, access) => {
  const caller = context.values.get(callerKey);
  if (caller === undefined) throw unauthenticated();
  requireRaceScope(caller, access);
  return caller.affiliateId;
};

/** How the internal listener finds the affiliate a request names (storage's RaceStore). */
export interface AffiliateKeys {
  /** Created on first sight (as ingest creates it): CreateRace only. */
  affiliateKey(externalId: string): Promise<number>;
  /** Never creates: every other call. */
  findAffiliateKey(externalId: string): Promise<number | undefined>;
}

/**
 * The internal listener (the request gate has checked the ADMIN_TOKEN): the affiliate the request
 * names by its platform id. Only CreateRace creates an affiliate not seen yet; for any other call an
 * unknown affiliate has no race (not_found, or an empty list), and nothing is written.
 */
export function namedAffiliate(keys: AffiliateKeys): RaceCaller {
  return async (_context, _access, affiliateId, creates = false) => {
    if (affiliateId === "" || affiliateId.length > 64) {
      const message =
        "affiliateId is required on the internal listener (the platform's affiliate id of 1 to 64 characters)";
      throw invalidArgument([{ field: "affiliateId", message }]);
    }
    if (creates) return guard(() => keys.affiliateKey(affiliateId));
    return (await guard(() => keys.findAffiliateKey(affiliateId))) ?? NO_AFFILIATE;
  };
}

/** Where WatchRace streams are watched and counted: the race hub, and the instance's stream slots. */
export interface RaceStreams {
  readonly watch: RaceWatch;
  /** Race streams count with the boards' against the stream limits; absent: not counted (the internal listener). */
  readonly slots?: StreamSlots;
}

type RaceServiceImpl = ServiceImpl<typeof RaceService>;

/**
 * How RaceService is served: a JSON request naming a field RaceService does not have is refused
 * (invalid_argument), never answered as if the field were not there (a misspelt `prize` would otherwise
 * change nothing and answer 200).
 */
export const RACE_SERVICE_OPTIONS = { jsonOptions: { ignoreUnknownFields: false } } as const;

export function raceRpc(races: Races, callerAffiliate: RaceCaller, streams: RaceStreams): RaceServiceImpl {
  return {
    ...raceChanges(races, callerAffiliate),
    ...raceReads(races, callerAffiliate),
    ...raceWatching(callerAffiliate, streams),
  };
}

/** CreateRace, UpdateRace, DeleteRace and CancelRace: the scope races:write. */
function raceChanges(
  races: Races,
  callerAffiliate: RaceCaller,
): Pick<RaceServiceImpl, "createRace" | "updateRace" | "deleteRace" | "cancelRace"> {
  return {
    async createRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:write", request.affiliateId, true);
      const { fields, violations } = raceFieldsOf(request.rules);
      // Fields are named under `rules` as the request has them ("rules.prizes[2]").
      const view = answer(
        await guard(() => races.create(affiliateId, fields, violations, actorOf(context), request.allowPast)),
        "rules.",
      );
      return create(CreateRaceResponseSchema, { race: raceMessage(view) });
    },

    async updateRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:write", request.affiliateId);
      requireId(request.id, "id");
      const { patch, scope, violations } = racePatchOf(request);
      const updated = answer(
        await guard(() => races.update(affiliateId, request.id, patch, violations, actorOf(context), scope)),
      );
      return create(UpdateRaceResponseSchema, { race: raceMessage(updated), followingRaceIds: [...updated.following] });
    },

    async deleteRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:write", request.affiliateId);
      requireId(request.id, "id");
      const view = answer(await guard(() => races.delete(affiliateId, request.id, actorOf(context))));
      return create(DeleteRaceResponseSchema, { race: raceMessage(view) });
    },

    async cancelRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:write", request.affiliateId);
      requireId(request.id, "id");
      const view = answer(await guard(() => races.cancel(affiliateId, request.id, actorOf(context))));
      return create(CancelRaceResponseSchema, { race: raceMessage(view) });
    },
  };
}

/** GetRace and ListRaces: the scope races:read. */
function raceReads(races: Races, callerAffiliate: RaceCaller): Pick<RaceServiceImpl, "getRace" | "listRaces"> {
  return {
    async getRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:read", request.affiliateId);
      requireId(request.idOrSlug, "idOrSlug");
      const view = answer(await guard(() => races.get(affiliateId, request.idOrSlug)), "", "idOrSlug");
      const publishable = publicReader(context);
      const history = await guard(() =>
        races.history(view.race, { hideUserIds: publishable, hideActorIds: publishable }),
      );
      return create(GetRaceResponseSchema, {
        race: raceMessage(view, publicReader(context)),
        entries: raceEntries(view),
        unallocated: view.unallocated,
        history: raceHistoryMessage(history),
      });
    },

    async listRaces(request, context) {
      const affiliateId = await callerAffiliate(context, "races:read", request.affiliateId);
      const violations: Violation[] = [];
      const states = raceStatesOf(request.states, violations);
      if (violations.length > 0) throw invalidArgument(violations);
      const page = answer(
        await guard(() =>
          races.list(affiliateId, {
            states,
            ...(request.slug === "" ? {} : { slug: request.slug }),
            pageSize: request.pageSize,
            ...(request.pageToken === "" ? {} : { pageToken: request.pageToken }),
          }),
        ),
      );
      const hide = publicReader(context);
      return create(ListRacesResponseSchema, {
        races: page.races.map((view) => raceMessage(view, hide)),
        nextPageToken: page.nextPageToken,
      });
    },
  };
}

/** WatchRace: the scope races:read, and a stream slot while it is open. */
function raceWatching(callerAffiliate: RaceCaller, streams: RaceStreams): Pick<RaceServiceImpl, "watchRace"> {
  const { watch, slots } = streams;
  return {
    async *watchRace(request, context) {
      const affiliateId = await callerAffiliate(context, "races:read", request.affiliateId);
      requireId(request.idOrSlug, "idOrSlug");
      const queue = new WatchQueue(publicReader(context));
      const release = slots === undefined ? () => {} : holdSlot(slots, context, queue);
      const subscription = await watch
        .open(affiliateId, request.idOrSlug, queue, request.resumeVersion)
        .catch((error: unknown) => {
          release();
          if (error instanceof RaceNotWatchable) answer(error.outcome, "", "idOrSlug");
          throw error;
        });
      try {
        yield* queue.messages(context.signal);
      } finally {
        subscription.close();
        release();
      }
    },
  };
}

/**
 * A stream slot for the calling key and address, counted against the stream limits; returns its release.
 * A call without a caller holds none; one over a limit is refused with the live streams' error.
 */
function holdSlot(slots: StreamSlots, context: HandlerContext, queue: WatchQueue): () => void {
  const caller = context.values.get(callerKey);
  if (caller === undefined) return () => {};
  const address = callClientAddress(context.values) ?? "unknown";
  const stream = { protocol: context.protocolName, end: () => queue.end("revoked") };
  try {
    return slots.hold({ keyId: caller.keyId, address, scope: "races:read" }, stream);
  } catch (error) {
    throw liveError(error);
  }
}

/** A viewer holding more messages than this unread is too slow: its stream ends with resource_exhausted. */
const MAX_QUEUED_MESSAGES = 32;

/** One WatchRace stream: the hub's messages queued until connect-es takes them (bounded). */
class WatchQueue implements RaceViewer {
  readonly protocol = "rpc";
  private readonly queued: WatchRaceResponse[] = [];
  private ended: Error | "done" | undefined;
  private wake: (() => void) | undefined;

  /** `hideExcluded`: the reader is a publishable key (see publicReader). */
  constructor(private readonly hideExcluded: boolean) {}

  race(view: RaceView, version: string): boolean {
    return this.push(
      create(WatchRaceResponseSchema, {
        race: create(GetRaceResponseSchema, {
          race: raceMessage(view, this.hideExcluded),
          entries: raceEntries(view),
          unallocated: view.unallocated,
        }),
        version,
      }),
    );
  }

  heartbeat(version: string): boolean {
    return this.push(create(WatchRaceResponseSchema, { version, heartbeat: true }));
  }

  /** `revoked`: the key may no longer read the race; the stream ends unauthenticated, as a new call would. */
  end(reason: "slow" | "shutdown" | "revoked"): void {
    this.ended ??=
      reason === "shutdown"
        ? shuttingDown()
        : reason === "revoked"
          ? revokedKey()
          : new ServiceError(
              "TOO_MANY_STREAMS",
              "this stream was not read fast enough. Reconnect with resume_version",
              {
                retryAfterSeconds: 1,
              },
            );
    this.wake?.();
  }

  async *messages(signal: AbortSignal): AsyncGenerator<WatchRaceResponse> {
    const aborted = () => this.wake?.();
    signal.addEventListener("abort", aborted);
    try {
      for (;;) {
        const next = this.queued.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }
        if (this.ended instanceof Error) throw this.ended;
        if (signal.aborted) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", aborted);
    }
  }

  private push(message: WatchRaceResponse): boolean {
    if (this.ended !== undefined || this.queued.length >= MAX_QUEUED_MESSAGES) return false;
    this.queued.push(message);
    this.wake?.();
    return true;
  }
}

/**
 * Whether the call reads for the public: a publishable key (it sits in web pages). Its answers leave out the
 * excluded user ids, as REST's do; a secret key and the internal listener see them.
 */
function publicReader(context: HandlerContext): boolean {
  return context.values.get(callerKey)?.kind === "publishable";
}

/** Who a change is by, as the race's history records it: the API key, or the internal listener's admin. */
function actorOf(context: HandlerContext): RaceActor {
  const caller = context.values.get(callerKey);
  return caller === undefined ? ADMIN_ACTOR : { kind: "key", id: caller.keyId };
}

function requireId(id: string, field: "id" | "idOrSlug"): void {
  if (id !== "") return;
  const message =
    field === "id" ? "id is required (the race's id, race_…)" : "idOrSlug is required (a race's id or a series' slug)";
  throw invalidArgument([{ field, message }]);
}
