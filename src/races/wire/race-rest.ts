/**
 * The REST reads of races, for sites and browsers:
 *
 * - `GET {BASE_PATH}/races`: the affiliate's races, newest start first, without standings:
 *   `{"data":{"races":[…],"nextPageToken":"…"},"errors":null}`. Query: `state` (repeatable:
 *   scheduled, live, reviewing, final, cancelled), `slug`, `pageSize` (1 to 100, default 20),
 *   `pageToken` (the previous page's `nextPageToken`).
 * - `GET {BASE_PATH}/races/{slug-or-id}`: one race with its standings (a series' current race by
 *   its slug, or any race by its id): `{"data":{…the race…},"errors":null}` (race-json.ts).
 * - `GET {BASE_PATH}/races/{slug-or-id}/history`: that race's history (races/wire/codecs/race-history.ts), the
 *   excluded users as counts (REST never names them); a deleted race's too, by its id, ending with the deletion.
 * - `DELETE {BASE_PATH}/races/{slug-or-id}`: deletes a race nobody has seen yet (DeleteRace's rules;
 *   the key needs `races:write`), answering the race as it was.
 *
 * Admission is the live stream's: the key in `Authorization: Bearer`, or a publishable key in
 * `?key=` (a secret key there is refused); the key's rate limit counts each call; a publishable
 * key's allowed origins get the CORS headers. The key needs the scope `races:read`. Refusals are the
 * REST envelope with the catalogue's statuses (401, 403, 404 for a race of another affiliate or
 * none, 405, 429, 400 naming the query parameter, 503).
 */

import type { Caller } from "../../keys/core/caller.js";
import type { Admission } from "../../keys/gate/admission.js";
import { HttpRefusal, invalidArgument } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import type { ObserveCall } from "../../platform/observability/call-observation.js";
import { cacheControl } from "../../platform/transport/cache-control.js";
import type { Exchange } from "../../platform/transport/exchange.js";
import { bodyOf, NO_HEADERS, refuse, send } from "../../platform/wire/parts/rest-reply.js";
import type { Violation } from "../../values/violation.js";
import { RACE_STATES, type RaceState } from "../core/race-state.js";
import type { Races } from "../core/races.js";
import { raceHistoryJson } from "./codecs/race-history.js";
import { raceJson, raceSummaryJson } from "./codecs/race-json.js";
import { answer, guard, type RaceAccess, requireRaceScope } from "./parts/race-answers.js";

export const RACES_PATH = "/races";
export const GET_RACE_PROCEDURE = "topwagers.v1.RaceService/GetRace";
export const LIST_RACES_PROCEDURE = "topwagers.v1.RaceService/ListRaces";
export const DELETE_RACE_PROCEDURE = "topwagers.v1.RaceService/DeleteRace";

export interface RaceRestOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly races: Races;
  /** How long a caller may reuse an answer (Cache-Control), as boards: 0 is `no-store`. */
  readonly maxAgeSeconds: number;
  readonly observe?: ObserveCall;
  readonly logger?: Logger;
}

/** What differs between the REST calls of races (RaceRest.answerCall does the rest). */
interface RaceRestCall {
  readonly procedure: string;
  readonly scope: RaceAccess;
  /** The answer's Cache-Control. */
  readonly cacheControl: string;
  /** A refusal to answer before admission (a method the path does not take). */
  readonly refusal?: HttpRefusal | undefined;
  /** The answer's data, as JSON text. */
  readonly produce: (caller: Caller, params: URLSearchParams) => Promise<string>;
}

export class RaceRest {
  /** `{BASE_PATH}/races` */
  readonly path: string;

  constructor(private readonly options: RaceRestOptions) {
    this.path = `${options.basePath}${RACES_PATH}`;
  }

  /** The list's path, one race's (`/races/<one segment>`) or its history's; not the race's stream. */
  matches(path: string): boolean {
    if (path === this.path) return true;
    return this.raceOf(path) !== undefined;
  }

  /** What a tracer and the logs call the path: the list's, or one race's (or its history's) with `{slug}`. */
  route(path: string): string {
    if (path === this.path) return this.path;
    return this.raceOf(path)?.history === true ? `${this.path}/{slug}/history` : `${this.path}/{slug}`;
  }

  /** The race segment of one race's path, and whether the history is asked for; undefined for other paths. */
  private raceOf(path: string): { segment: string; history: boolean } | undefined {
    if (!path.startsWith(`${this.path}/`)) return undefined;
    const rest = path.slice(this.path.length + 1);
    const parts = rest.split("/");
    const [segment = "", below] = parts;
    if (segment === "" || parts.length > 2 || (below !== undefined && below !== "history")) return undefined;
    return { segment, history: below !== undefined };
  }

  async handle(exchange: Exchange, rawUrl: string, path: string): Promise<void> {
    const deletable = this.raceOf(path)?.history === false;
    if (exchange.method === "DELETE" && deletable) {
      return this.answerCall(exchange, rawUrl, path, {
        procedure: DELETE_RACE_PROCEDURE,
        scope: "races:write",
        cacheControl: "no-store",
        produce: (caller) => this.remove(caller, path),
      });
    }
    const asked = this.raceOf(path);
    return this.answerCall(exchange, rawUrl, path, {
      procedure: path !== this.path ? GET_RACE_PROCEDURE : LIST_RACES_PROCEDURE,
      scope: "races:read",
      cacheControl: cacheControl(this.options.maxAgeSeconds),
      refusal:
        exchange.method === "GET"
          ? undefined
          : new HttpRefusal(
              "METHOD_NOT_ALLOWED",
              `use ${deletable ? "GET or DELETE" : "GET"} for ${this.route(path)}`,
              {
                allow: deletable ? "GET, DELETE" : "GET",
              },
            ),
      produce: (caller, params) =>
        asked === undefined
          ? this.list(caller.affiliateId, params)
          : this.race(caller, decodeSegment(asked.segment), asked.history),
    });
  }

  /**
   * One REST call of races, observed: refused at once with `call.refusal` (a wrong method); else the key admitted
   * from Authorization or, for a page that cannot set headers (an <img>, EventSource), a publishable key in ?key=;
   * the scope required; `{"data":<what produce answers>,"errors":null}` sent with the call's Cache-Control.
   */
  private async answerCall(exchange: Exchange, rawUrl: string, path: string, call: RaceRestCall): Promise<void> {
    const startedAt = process.hrtime.bigint();
    let rateHeaders: Readonly<Record<string, string>> = NO_HEADERS;
    let failure: unknown;
    let keyId: string | undefined;
    try {
      if (call.refusal !== undefined) throw call.refusal;
      const params = queryParams(rawUrl);
      const admitted = await this.options.admission.admitWithUrlKey(
        exchange.headers,
        params.get("key"),
        exchange.clientAddress,
      );
      keyId = admitted.caller.keyId;
      rateHeaders = admitted.headers;
      requireRaceScope(admitted.caller, call.scope);
      const text = await call.produce(admitted.caller, params);
      const sending = send(exchange, 200, bodyOf(`{"data":${text},"errors":null}`), rateHeaders, {
        "cache-control": call.cacheControl,
      });
      if (sending !== undefined) await sending;
    } catch (reason) {
      failure = reason;
      await refuse(exchange, reason, rateHeaders, this.options.logger);
    } finally {
      this.options.observe?.(call.procedure, "rest", startedAt, failure, {
        keyId,
        clientAddress: exchange.clientAddress,
        path: this.route(path),
      });
    }
  }

  /**
   * `DELETE {BASE_PATH}/races/{slug-or-id}`: deletes a race nobody has seen yet (RaceService's DeleteRace; a slug
   * names its series' current race) with a key that has `races:write`; answers the race as it was.
   */
  private async remove(caller: Caller, path: string): Promise<string> {
    const { races } = this.options;
    const { affiliateId } = caller;
    const named = decodeSegment(this.raceOf(path)?.segment ?? "");
    const race = answer(await guard(() => races.get(affiliateId, named)), "", null);
    const actor = { kind: "key", id: caller.keyId } as const;
    const view = answer(await guard(() => races.delete(affiliateId, race.race.id, actor)), "", null);
    return raceJson(view);
  }

  private async race(caller: Caller, idOrSlug: string, history: boolean): Promise<string> {
    const { races } = this.options;
    const { affiliateId } = caller;
    const found = await guard(() => races.get(affiliateId, idOrSlug));
    // REST shows no excluded user's id to any key, and no actor's id to a publishable key (the public's).
    const reader = { hideUserIds: true, hideActorIds: caller.kind === "publishable" };
    if (history && found.kind === "not-found") {
      // A deleted race is not found, but its history is still its readers' (ending with the deletion).
      return raceHistoryJson(answer(await guard(() => races.deletedHistory(affiliateId, idOrSlug, reader)), "", null));
    }
    const view = answer(found, "", null);
    if (!history) return raceJson(view);
    return raceHistoryJson(await guard(() => races.history(view.race, reader)));
  }

  private async list(affiliateId: number, params: URLSearchParams): Promise<string> {
    const violations: Violation[] = [];
    const states: RaceState[] = [];
    for (const value of params.getAll("state").flatMap((v) => v.split(","))) {
      if ((RACE_STATES as readonly string[]).includes(value)) states.push(value as RaceState);
      else {
        violations.push({
          field: "state",
          message: `state must be one of ${RACE_STATES.join(" ")} (repeat it for several), got ${JSON.stringify(value)}`,
        });
      }
    }
    const pageSizeText = params.get("pageSize");
    let pageSize: number | undefined;
    if (pageSizeText !== null) {
      if (/^\d{1,9}$/.test(pageSizeText)) pageSize = Number(pageSizeText);
      else
        violations.push({
          field: "pageSize",
          message: `pageSize must be a whole number from 1 to 100, got ${JSON.stringify(pageSizeText)}`,
        });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const slug = params.get("slug");
    const pageToken = params.get("pageToken");
    const page = answer(
      await guard(() =>
        this.options.races.list(affiliateId, {
          states,
          ...(slug === null || slug === "" ? {} : { slug }),
          ...(pageSize === undefined ? {} : { pageSize }),
          ...(pageToken === null || pageToken === "" ? {} : { pageToken }),
        }),
      ),
    );
    return `{"races":[${page.races.map(raceSummaryJson).join(",")}],"nextPageToken":${JSON.stringify(page.nextPageToken)}}`;
  }
}

/** The query string's parameters. */
function queryParams(url: string): URLSearchParams {
  const at = url.indexOf("?");
  return new URLSearchParams(at === -1 ? "" : url.slice(at + 1));
}

/** A path segment as text ("%2D" is "-"); a malformed escape is kept as sent (and found by no race). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
