/**
 * Undoing and correcting races (issue 35 items 2 and 4), on MariaDB through the public port: Connect's JSON
 * POST as `curl` sends it (fetch, the exact status and body) and gRPC (connect-es). A race that has already
 * ended is refused naming `endTimestamp` unless `allowPast`; a scheduled race is deleted and its slug is free;
 * a cancelled race's slug is taken again while the old race stays readable by id; an UpdateRace that sends a
 * field it would not apply (or a field RaceService does not have) is refused naming it; a change to a series'
 * race reaches its next race by default and not with THIS_RACE.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  RaceRepeat,
  type RaceRulesSchema,
  RaceService,
  RaceState,
  RaceUpdateScope,
} from "../../gen/topwagers/v1/races_pb.js";
import { refusal, sendsBearer } from "../support/calls.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { restCall } from "../support/rest.js";

const NOW = Math.floor(Date.now() / 1000);
const DAY = 86_400;
/** A year ago: a race typed with last year's date. */
const LAST_YEAR = NOW - 365 * DAY;

let servers: IngestServers;
let key = "";
let session: Http2SessionManager;

function grpcRaces() {
  return createClient(
    RaceService,
    createGrpcTransport({ baseUrl: servers.publicUrl, interceptors: [sendsBearer(key)], sessionManager: session }),
  );
}

/** A race's rules for days `fromDay` to `toDay` after now (not started yet), with the rest of its rules. */
function inDays(slug: string, title: string, fromDay: number, toDay: number, rest = {}) {
  return { slug, title, startTimestamp: BigInt(NOW + fromDay * DAY), endTimestamp: BigInt(NOW + toDay * DAY), ...rest };
}

/** Makes a race over gRPC starting a minute ago, with the rest of its rules: the race as made. */
async function raceFromAMinuteAgo(slug: string, title: string, rest: MessageInitShape<typeof RaceRulesSchema>) {
  const rules = { slug, title, startTimestamp: BigInt(NOW - 60), ...rest };
  return (await grpcRaces().createRace({ rules })).race;
}

/** A RaceService call as `curl` makes it: Connect's JSON POST. */
function jsonCall(method: string, body: unknown) {
  return restCall(`${servers.publicUrl}/topwagers.v1.RaceService/${method}`, { key, body });
}

function violationsOf(error: ConnectError): [string, string][] {
  return error
    .findDetails(BadRequestSchema)
    .flatMap((d) => d.fieldViolations.map((v): [string, string] => [v.field, v.description]));
}

/** Connect's JSON error body without its binary details: code, message and the BadRequest violations. */
function jsonError(json: unknown): { code: unknown; message: unknown; violations: unknown } {
  const body = json as { code?: unknown; message?: unknown; details?: { type: string; debug?: unknown }[] };
  const badRequest = body.details?.find((d) => d.type === "google.rpc.BadRequest")?.debug as
    | { fieldViolations?: unknown }
    | undefined;
  return { code: body.code, message: body.message, violations: badRequest?.fieldViolations };
}

beforeAll(async () => {
  servers = await startIngestServers("race_corrections", { INGEST_TOKEN: TEST_INGEST_TOKEN });
  session = new Http2SessionManager(servers.publicUrl);
  key = (await createKey(servers.database.db, "corrections")).secret;
});

afterAll(async () => {
  session?.abort();
  await servers?.close();
});

const PAST_MESSAGE = (end: number) =>
  `endTimestamp ${end} has already passed (the server's clock is at ` +
  `${NOW}): the race would be frozen as it stands. Check the year, or send allowPast: true to record a race that is over`;

describe("a race that has already ended", () => {
  it("is refused naming endTimestamp over Connect JSON and gRPC, and made with allowPast", async () => {
    const rules = {
      slug: "typo",
      title: "Typo",
      startTimestamp: String(LAST_YEAR),
      endTimestamp: String(LAST_YEAR + DAY),
    };
    const json = await jsonCall("CreateRace", { rules });
    expect(json.status).toBe(400);
    const error = jsonError(json.json);
    expect(error.code).toBe("invalid_argument");
    // The server's clock may have moved a second or two since NOW.
    expect(error.violations).toHaveLength(1);
    const [violation] = error.violations as { field: string; description: string }[];
    expect(violation?.field).toBe("rules.end_timestamp");
    const clock = Number(/clock is at (\d+)/.exec(violation?.description ?? "")?.[1]);
    expect(clock - NOW).toBeGreaterThanOrEqual(0);
    expect(clock - NOW).toBeLessThan(60);
    expect(violation?.description).toBe(PAST_MESSAGE(LAST_YEAR + DAY).replace(String(NOW), String(clock)));

    const rpc = await refusal(
      grpcRaces().createRace({
        rules: { ...rules, startTimestamp: BigInt(LAST_YEAR), endTimestamp: BigInt(LAST_YEAR + DAY) },
      }),
    );
    expect([rpc.code, violationsOf(rpc).map(([field]) => field)]).toEqual([
      Code.InvalidArgument,
      ["rules.end_timestamp"],
    ]);

    const made = await jsonCall("CreateRace", { rules, allowPast: true });
    expect(made.status).toBe(200);
    const race = (made.json as { race: { state: string; endsAt: string; rules: { slug: string } } }).race;
    expect([race.state, race.endsAt, race.rules.slug]).toEqual([
      "RACE_STATE_REVIEWING",
      String(LAST_YEAR + DAY),
      "typo",
    ]);
  });
});

describe("deleting a race nobody has seen", () => {
  it("deletes a scheduled race: its id is not found and its slug is free; a live one is refused", async () => {
    const client = grpcRaces();
    const rules = inDays("december-typo", "Wrong prizes", 10, 20, { prizes: ["1"] });
    const created = (await client.createRace({ rules })).race;
    const deleted = await jsonCall("DeleteRace", { id: created?.id });
    expect(deleted.status).toBe(200);
    const was = (deleted.json as { race: { id: string; state: string } }).race;
    expect([was.id, was.state]).toEqual([created?.id, "RACE_STATE_SCHEDULED"]);
    const gone = await refusal(client.getRace({ idOrSlug: created?.id ?? "" }));
    expect([gone.code, gone.rawMessage]).toEqual([Code.NotFound, `this affiliate has no race "${created?.id}"`]);
    const again = await jsonCall("DeleteRace", { id: created?.id });
    expect([again.status, jsonError(again.json).code]).toEqual([404, "not_found"]);
    const remade = (await client.createRace({ rules: { ...rules, prizes: ["100"] } })).race;
    expect(remade?.rules?.prizes).toEqual(["100"]);

    const live = await raceFromAMinuteAgo("live-one", "Live", { endTimestamp: BigInt(NOW + DAY) });
    const refused = await refusal(client.deleteRace({ id: live?.id ?? "" }));
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `race ${live?.id} started at ${NOW - 60}. Only a race not started yet is deleted: cancel it instead`,
    ]);
  });
});

describe("DELETE /races/{slug-or-id}", () => {
  it("deletes a scheduled race with a secret key, refuses a publishable one (403) and a started race (400)", async () => {
    const client = grpcRaces();
    const rules = inDays("rest-delete", "Rest delete", 3, 4);
    const id = (await client.createRace({ rules })).race?.id ?? "";
    const publishable = (
      await createKey(servers.database.db, "corrections", null, { publishable: true, allowedOrigins: [] })
    ).secret;
    const refused = await restCall(`${servers.publicUrl}/races/${id}`, { method: "DELETE", key: publishable });
    expect([refused.status, refused.json]).toEqual([
      403,
      { data: null, errors: [{ code: "permission_denied", message: "this API key lacks the scope races:write" }] },
    ]);
    const deleted = await restCall(`${servers.publicUrl}/races/rest-delete`, { method: "DELETE", key });
    const data = (deleted.json as { data: { id: string; state: string }; errors: null }).data;
    expect([deleted.status, deleted.headers["cache-control"], data.id, data.state]).toEqual([
      200,
      "no-store",
      id,
      "scheduled",
    ]);
    const gone = await restCall(`${servers.publicUrl}/races/${id}`, { method: "GET", key });
    expect(gone.status).toBe(404);

    const live = (await raceFromAMinuteAgo("rest-live", "Live", { endTimestamp: BigInt(NOW + DAY) }))?.id;
    const started = await restCall(`${servers.publicUrl}/races/${live}`, { method: "DELETE", key });
    expect([started.status, started.json]).toEqual([
      400,
      {
        data: null,
        errors: [
          {
            code: "failed_precondition",
            message: `race ${live} started at ${NOW - 60}. Only a race not started yet is deleted: cancel it instead`,
          },
        ],
      },
    ]);
  });
});

describe("a cancelled race's slug", () => {
  it("is taken by a new race; the old race stays readable by id and the slug answers the new one", async () => {
    const client = grpcRaces();
    const rules = { slug: "fix-me", title: "Wrong", startTimestamp: BigInt(NOW - 60), endTimestamp: BigInt(NOW + DAY) };
    const old = (await client.createRace({ rules })).race;
    const held = await refusal(client.createRace({ rules: { ...rules, title: "Right" } }));
    expect(held.code).toBe(Code.AlreadyExists);
    await client.cancelRace({ id: old?.id ?? "" });

    const fixed = (await client.createRace({ rules: { ...rules, title: "Right" } })).race;
    expect(fixed?.id).not.toBe(old?.id);
    const bySlug = await restCall(`${servers.publicUrl}/races/fix-me`, { method: "GET", key });
    const data = (bySlug.json as { data: { id: string; title: string; state: string } }).data;
    expect([bySlug.status, data.id, data.title, data.state]).toEqual([200, fixed?.id, "Right", "live"]);
    const oldById = (await client.getRace({ idOrSlug: old?.id ?? "" })).race;
    expect([oldById?.state, oldById?.rules?.title, oldById?.rules?.slug]).toEqual([
      RaceState.CANCELLED,
      "Wrong",
      "fix-me",
    ]);
    const history = await client.listRaces({ slug: "fix-me" });
    expect(history.races.map((race) => race.id).sort()).toEqual([old?.id, fixed?.id].sort());
    // The new race holds the slug: a third is refused.
    const third = await refusal(client.createRace({ rules }));
    expect(third.code).toBe(Code.AlreadyExists);
  });
});

describe("a series' slug", () => {
  it("stays held while a race of the series is live, is free once all are cancelled, and falls back after a delete", async () => {
    const client = grpcRaces();
    const rules = {
      slug: "daily-held",
      title: "Daily",
      startTimestamp: BigInt(NOW - 60),
      repeat: RaceRepeat.DAILY,
    };
    const first = (await client.createRace({ rules })).race?.id ?? "";
    await servers.app.races.tick();
    const next = (await client.getRace({ idOrSlug: first })).race?.nextRaceId ?? "";
    expect(next).toMatch(/^race_/);
    // The series' last race cancelled, but its first is live: the slug stays with the series.
    await client.cancelRace({ id: next });
    const live = await refusal(client.createRace({ rules: { ...rules, title: "Again" } }));
    expect([live.code, live.rawMessage]).toEqual([
      Code.AlreadyExists,
      'another race of this affiliate already has the slug "daily-held"',
    ]);
    await client.cancelRace({ id: first });
    const later = inDays("daily-held", "Later", 5, 6);
    const taken = (await client.createRace({ rules: later })).race?.id ?? "";
    expect((await client.getRace({ idOrSlug: "daily-held" })).race?.id).toBe(taken);
    await client.deleteRace({ id: taken });
    // No race holds the slug: it answers the old series again (its current race, cancelled).
    const fallback = (await client.getRace({ idOrSlug: "daily-held" })).race;
    expect([fallback?.id, fallback?.state]).toEqual([next, RaceState.CANCELLED]);
  });
});

describe("an update that cannot be misread", () => {
  it("refuses prizes sent without replacePrizes and an unknown field, naming them; keeps the race unchanged", async () => {
    const client = grpcRaces();
    const race = await raceFromAMinuteAgo("prizes-kept", "Prizes", { endTimestamp: BigInt(NOW + DAY), prizes: ["50"] });
    const id = race?.id ?? "";
    const ignored = await jsonCall("UpdateRace", { id, prizes: ["77"] });
    expect([ignored.status, jsonError(ignored.json)]).toEqual([
      400,
      {
        code: "invalid_argument",
        message: "prizes is applied only with replacePrizes: true (the whole prize table is replaced). Send both",
        violations: [
          {
            field: "prizes",
            description:
              "prizes is applied only with replacePrizes: true (the whole prize table is replaced). Send both",
          },
        ],
      },
    ]);
    const excluded = await refusal(client.updateRace({ id, excludedUserIds: ["staff"] }));
    expect([excluded.code, violationsOf(excluded)]).toEqual([
      Code.InvalidArgument,
      [
        [
          "excluded_user_ids",
          "excludedUserIds is applied only with replaceExcludedUserIds: true (the whole list is replaced). Send both",
        ],
      ],
    ]);
    const misspelt = await jsonCall("UpdateRace", { id, prize: ["77"] });
    expect([misspelt.status, jsonError(misspelt.json).code]).toEqual([400, "invalid_argument"]);
    expect(String(jsonError(misspelt.json).message)).toContain('"prize"');
    expect((await client.getRace({ idOrSlug: id })).race?.rules?.prizes).toEqual(["50"]);

    const applied = await jsonCall("UpdateRace", { id, replacePrizes: true, prizes: ["77"] });
    expect(applied.status).toBe(200);
    expect((applied.json as { race: { rules: { prizes: string[] } } }).race.rules.prizes).toEqual(["77"]);
  });
});

describe("a change to a series' race", () => {
  it("reaches the next race by default, not with THIS_RACE; THIS_RACE is refused before the next race exists", async () => {
    const client = grpcRaces();
    const first = await raceFromAMinuteAgo("daily-series", "Daily", { repeat: RaceRepeat.DAILY, prizes: ["10"] });
    const id = first?.id ?? "";
    // The server's clock announces the start and makes the next race.
    await servers.app.races.tick();
    const nextId = (await client.getRace({ idOrSlug: id })).race?.nextRaceId ?? "";
    expect(nextId).toMatch(/^race_/);

    const both = await jsonCall("UpdateRace", { id, title: "Daily, bigger", replacePrizes: true, prizes: ["20"] });
    expect(both.status).toBe(200);
    expect((both.json as { followingRaceIds: string[] }).followingRaceIds).toEqual([nextId]);
    const next = (await client.getRace({ idOrSlug: nextId })).race;
    expect([next?.rules?.title, next?.rules?.prizes, next?.startsAt]).toEqual([
      "Daily, bigger",
      ["20"],
      BigInt(NOW - 60 + DAY),
    ]);

    const one = await client.updateRace({ id, title: "Today only", applyTo: RaceUpdateScope.THIS_RACE });
    expect([one.race?.rules?.title, one.followingRaceIds]).toEqual(["Today only", []]);
    expect((await client.getRace({ idOrSlug: nextId })).race?.rules?.title).toBe("Daily, bigger");

    // The next race is scheduled and its own next race is made from it when it starts.
    const early = await refusal(client.updateRace({ id: nextId, title: "x", applyTo: RaceUpdateScope.THIS_RACE }));
    expect([early.code, early.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `the series' next race is made from race ${nextId} when it starts, so a change to it reaches the races ` +
        "after it: send applyTo RACE_UPDATE_SCOPE_THIS_AND_FOLLOWING (the default), or change the next race once it exists",
    ]);
  });
});
