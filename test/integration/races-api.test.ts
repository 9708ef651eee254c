/**
 * RaceService on real sockets over MariaDB, through connect-es clients on every protocol of the public
 * port (Connect JSON and binary, gRPC, gRPC-Web) with an affiliate's key, and on the internal listener
 * with the ADMIN_TOKEN: create, read (by id and by slug), list (newest start first, by page and by
 * state), update (the period refused once live), cancel; another affiliate's race is not_found; every
 * invalid field is named; ties split exactly through the API with the rest unallocated, and excluded
 * users and users under the minimum never appear.
 */
import {
  type Client,
  Code,
  type ConnectError,
  createClient,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RaceRepeat, RaceService, RaceState } from "../../gen/topwagers/v1/races_pb.js";
import { RankBy } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { entryCells, refusal } from "../support/calls.js";
import { addBoard, createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const ADMIN_TOKEN = "test-admin-token-races-0123456789";
/** The races run around the real clock: the service's own (the clock is not moved here). */
const NOW = Math.floor(Date.now() / 1000);
const START = NOW - 3_600;
const END = NOW + 7 * 86_400;

type Protocol = "connect-json" | "connect-binary" | "grpc" | "grpc-web";
const PROTOCOLS: readonly Protocol[] = ["connect-json", "connect-binary", "grpc", "grpc-web"];

let servers: IngestServers;
const sessions: Http2SessionManager[] = [];

function transport(protocol: Protocol, baseUrl: string, token: string | null): Transport {
  const authorize: Interceptor = (next) => async (request) => {
    if (token !== null) request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  const interceptors = [authorize];
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
    case "connect-binary":
      return createConnectTransport({
        baseUrl,
        httpVersion: "2",
        useBinaryFormat: true,
        interceptors,
        sessionManager: session(baseUrl),
      });
    case "grpc":
      return createGrpcTransport({ baseUrl, interceptors, sessionManager: session(baseUrl) });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
  }
}

function session(baseUrl: string): Http2SessionManager {
  const manager = new Http2SessionManager(baseUrl);
  sessions.push(manager);
  return manager;
}

/** RaceService on the public port with an affiliate's key. */
function races(key: string | null, protocol: Protocol = "connect-json"): Client<typeof RaceService> {
  return createClient(RaceService, transport(protocol, servers.publicUrl, key));
}

/** RaceService on the internal listener with a token (default: the ADMIN_TOKEN). */
function adminRaces(
  token: string | null = ADMIN_TOKEN,
  protocol: Protocol = "connect-json",
): Client<typeof RaceService> {
  return createClient(RaceService, transport(protocol, servers.internalUrl, token));
}

/** The fields named by an error's google.rpc.BadRequest, with their descriptions. */
function fieldViolations(error: ConnectError): [string, string][] {
  return error
    .findDetails(BadRequestSchema)
    .flatMap((d) => d.fieldViolations.map((v): [string, string] => [v.field, v.description]));
}

function reasonOf(error: ConnectError): string | undefined {
  return error.findDetails(ErrorInfoSchema)[0]?.reason;
}

beforeAll(async () => {
  servers = await startIngestServers("races_api", { INGEST_TOKEN: TEST_INGEST_TOKEN, ADMIN_TOKEN });
});

afterAll(async () => {
  for (const manager of sessions) manager.abort();
  await servers?.close();
});

describe.each(PROTOCOLS)("%s on the public port", (protocol) => {
  const affiliate = `ra-${protocol}`;
  let key = "";

  beforeAll(async () => {
    key = (await createKey(servers.database.db, affiliate)).secret;
    await addBoard(servers.database.db, affiliate, [
      ["u-alice", "alice", "https://img.example/alice.png", ["500", START + 10]],
      ["u-bob", "bob", "", ["300.5", START + 20], ["0.25", START + 30]],
    ]);
  });

  it("creates a race, reads it by id and by slug, updates its rules, refuses a period change once live, cancels it", async () => {
    const client = races(key, protocol);
    const created = await client.createRace({
      // Ignored on the public port: the key's affiliate owns the race.
      affiliateId: "someone-else",
      rules: {
        slug: "weekly-cup",
        title: "$800 weekly cup",
        startTimestamp: BigInt(START),
        endTimestamp: BigInt(END),
        prizes: ["500.00", "300.00"],
      },
    });
    const race = created.race;
    expect(race?.id).toMatch(/^race_[a-z2-7]{20}$/);
    expect(race?.affiliateId).toBe(affiliate);
    expect(race?.state).toBe(RaceState.LIVE);
    expect([race?.startsAt, race?.endsAt, race?.finalAt]).toEqual([BigInt(START), BigInt(END), BigInt(END + 86_400)]);
    expect(Math.abs(Number(race?.now) - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(5);
    expect(race?.rules).toMatchObject({
      slug: "weekly-cup",
      title: "$800 weekly cup",
      rankBy: RankBy.WAGERED,
      prizes: ["500.00", "300.00"],
      currency: "USD",
      minWagered: "0",
      excludedUserIds: [],
      reviewSeconds: 86_400,
      shown: 2,
      repeat: RaceRepeat.NONE,
      timeZone: "UTC",
    });
    expect([race?.digest, race?.frozenAt, race?.cancelledAt, race?.nextRaceId, race?.nextStartsAt]).toEqual([
      "",
      undefined,
      undefined,
      "",
      0n,
    ]);
    const id = race?.id ?? "";

    for (const idOrSlug of [id, "weekly-cup"]) {
      const got = await client.getRace({ idOrSlug });
      expect(got.race?.id).toBe(id);
      expect(got.entries.map((e) => [...entryCells(e), e.prize])).toEqual([
        [1, "u-alice", "alice", "https://img.example/alice.png", "500", "500", "500.00"],
        [2, "u-bob", "bob", DEFAULT_AVATAR_URL, "300.75", "300.75", "300.00"],
      ]);
      expect(got.unallocated).toBe("0.00");
    }

    const updated = await client.updateRace({
      id,
      title: "$900 weekly cup",
      replacePrizes: true,
      prizes: ["600", "300"],
      shown: 5,
    });
    expect([updated.race?.rules?.title, updated.race?.rules?.prizes, updated.race?.rules?.shown]).toEqual([
      "$900 weekly cup",
      ["600", "300"],
      5,
    ]);
    expect((await client.getRace({ idOrSlug: id })).entries.map((e) => e.prize)).toEqual(["600", "300"]);

    const moved = await refusal(client.updateRace({ id, startTimestamp: BigInt(START + 60) }));
    expect([moved.code, reasonOf(moved), moved.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "RACE_STATE",
      `the race started at ${START}. Its period changes only while it is scheduled`,
    ]);

    const cancelled = await client.cancelRace({ id });
    expect(cancelled.race?.state).toBe(RaceState.CANCELLED);
    expect(Number(cancelled.race?.cancelledAt)).toBeGreaterThanOrEqual(NOW);
    // Cancelling again changes nothing.
    expect((await client.cancelRace({ id })).race?.cancelledAt).toBe(cancelled.race?.cancelledAt);
    const after = await client.getRace({ idOrSlug: id });
    expect([after.race?.state, after.entries]).toEqual([RaceState.CANCELLED, []]);
    const change = await refusal(client.updateRace({ id, title: "again" }));
    expect([change.code, reasonOf(change), change.rawMessage]).toEqual([
      Code.FailedPrecondition,
      "RACE_STATE",
      "the race is cancelled. It changes no more",
    ]);
  });

  it("lists the affiliate's races newest start first, by page and by state", async () => {
    const client = races(key, protocol);
    const rules = (slug: string, start: number) => ({
      slug,
      title: slug,
      startTimestamp: BigInt(start),
      endTimestamp: BigInt(start + 86_400),
    });
    // Over before it was made: recorded as history on purpose.
    const old = (await client.createRace({ rules: rules("list-old", START - 86_400 * 3), allowPast: true })).race?.id;
    const live = (await client.createRace({ rules: rules("list-live", START) })).race?.id;
    const soon = (await client.createRace({ rules: rules("list-soon", NOW + 86_400) })).race?.id;
    await client.cancelRace({ id: old ?? "" });

    const all = await client.listRaces({ slug: "" });
    const mine = all.races.filter((r) => r.rules?.slug.startsWith("list-"));
    expect(mine.map((r) => [r.id, r.state])).toEqual([
      [soon, RaceState.SCHEDULED],
      [live, RaceState.LIVE],
      [old, RaceState.CANCELLED],
    ]);

    const pages: string[][] = [];
    let pageToken = "";
    do {
      const page = await client.listRaces({ pageSize: 1, pageToken, slug: "list-soon" });
      pages.push(page.races.map((r) => r.id));
      pageToken = page.nextPageToken;
    } while (pageToken !== "" && pages.length < 5);
    expect(pages).toEqual([[soon]]);

    const paged: string[] = [];
    pageToken = "";
    for (let i = 0; i < 10; i++) {
      const page = await client.listRaces({ pageSize: 2, pageToken });
      expect(page.races.length).toBeLessThanOrEqual(2);
      paged.push(...page.races.map((r) => r.id));
      pageToken = page.nextPageToken;
      if (pageToken === "") break;
    }
    expect(paged).toEqual(all.races.map((r) => r.id));

    const byState = await client.listRaces({ states: [RaceState.SCHEDULED, RaceState.CANCELLED] });
    expect(byState.races.filter((r) => r.rules?.slug.startsWith("list-")).map((r) => r.id)).toEqual([soon, old]);

    const bad = await refusal(client.listRaces({ pageSize: 101 }));
    expect([bad.code, fieldViolations(bad)]).toEqual([
      Code.InvalidArgument,
      [["page_size", "pageSize must be between 1 and 100"]],
    ]);
    const token = await refusal(client.listRaces({ pageToken: "not-a-token" }));
    expect([token.code, fieldViolations(token).map(([field]) => field)]).toEqual([
      Code.InvalidArgument,
      ["page_token"],
    ]);
  });

  it("lets a publishable key read races but never change them; a restricted key is refused naming its missing scope", async () => {
    const owner = races(key, protocol);
    const id = (
      await owner.createRace({
        rules: { slug: "scoped", title: "Scoped", startTimestamp: BigInt(START), endTimestamp: BigInt(END) },
      })
    ).race?.id;
    const publishable = (
      await createKey(servers.database.db, affiliate, null, { publishable: true, allowedOrigins: [] })
    ).secret;
    const reader = races(publishable, protocol);
    expect((await reader.getRace({ idOrSlug: "scoped" })).race?.id).toBe(id);
    expect((await reader.listRaces({ slug: "scoped" })).races.map((r) => r.id)).toEqual([id]);
    for (const call of [
      () => reader.createRace({ rules: { slug: "nope", title: "Nope", startTimestamp: BigInt(START) } }),
      () => reader.updateRace({ id: id ?? "", title: "Mine" }),
      () => reader.cancelRace({ id: id ?? "" }),
    ]) {
      const error = await refusal(call());
      expect([error.code, reasonOf(error), error.rawMessage]).toEqual([
        Code.PermissionDenied,
        "MISSING_SCOPE",
        "this API key lacks the scope races:write",
      ]);
      expect(error.findDetails(ErrorInfoSchema)[0]?.metadata).toEqual({ scope: "races:write" });
    }
    const boardsOnly = (await createKey(servers.database.db, affiliate, null, {}, ["boards:read"])).secret;
    const refused = await refusal(races(boardsOnly, protocol).getRace({ idOrSlug: "scoped" }));
    expect([refused.code, refused.rawMessage]).toEqual([
      Code.PermissionDenied,
      "this API key lacks the scope races:read",
    ]);
    const readOnly = (await createKey(servers.database.db, affiliate, null, {}, ["races:read"])).secret;
    const write = await refusal(races(readOnly, protocol).cancelRace({ id: id ?? "" }));
    expect([write.code, write.rawMessage]).toEqual([Code.PermissionDenied, "this API key lacks the scope races:write"]);
    expect((await owner.getRace({ idOrSlug: id ?? "" })).race?.state).toBe(RaceState.LIVE);
  });

  it("answers not_found for another affiliate's race, whatever the call", async () => {
    const theirs =
      (
        await adminRaces().createRace({
          affiliateId: `other-${protocol}`,
          rules: { slug: "private", title: "Theirs", startTimestamp: BigInt(START), endTimestamp: BigInt(END) },
        })
      ).race?.id ?? "";
    const client = races(key, protocol);
    for (const call of [
      () => client.getRace({ idOrSlug: theirs }),
      () => client.getRace({ idOrSlug: "private" }),
      () => client.updateRace({ id: theirs, title: "mine now" }),
      () => client.cancelRace({ id: theirs }),
    ]) {
      const error = await refusal(call());
      expect([error.code, reasonOf(error)]).toEqual([Code.NotFound, "RACE_NOT_FOUND"]);
    }
    const error = await refusal(client.getRace({ idOrSlug: theirs }));
    expect(error.rawMessage).toBe(`this affiliate has no race "${theirs}"`);
    expect(fieldViolations(error)).toEqual([["id_or_slug", `this affiliate has no race "${theirs}"`]]);
    // Still there, untouched, for its owner.
    const owner = await adminRaces().getRace({ affiliateId: `other-${protocol}`, idOrSlug: theirs });
    expect([owner.race?.rules?.title, owner.race?.state]).toEqual(["Theirs", RaceState.LIVE]);
  });

  it("names every invalid field: a negative prize, more than 100 prizes, an unknown time zone, a taken slug", async () => {
    const client = races(key, protocol);
    const base = { slug: "bad", title: "Bad", startTimestamp: BigInt(START), endTimestamp: BigInt(END) };
    const negative = await refusal(
      client.createRace({ rules: { ...base, prizes: ["10", "-5", "1e3"], timeZone: "Mars/Olympus_Mons" } }),
    );
    expect([negative.code, reasonOf(negative)]).toEqual([Code.InvalidArgument, "INVALID_ARGUMENT"]);
    expect(fieldViolations(negative)).toEqual([
      [
        "rules.prizes[1]",
        "prizes[1] (rank 2) must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after",
      ],
      [
        "rules.prizes[2]",
        "prizes[2] (rank 3) must be a decimal amount of 0 or more with at most 12 digits before the point and 8 after",
      ],
      ["rules.time_zone", "timeZone is not an IANA time zone name known to this server"],
    ]);
    const many = await refusal(
      client.createRace({ rules: { ...base, prizes: Array.from({ length: 101 }, () => "1") } }),
    );
    expect(fieldViolations(many)).toEqual([["rules.prizes", "prizes has 101 ranks. At most 100 are allowed"]]);
    const empty = await refusal(client.createRace({}));
    expect(fieldViolations(empty).map(([field]) => field)).toEqual([
      "rules.slug",
      "rules.title",
      "rules.start_timestamp",
      "rules.end_timestamp",
    ]);

    await client.createRace({ rules: { ...base, slug: "taken" } });
    const taken = await refusal(client.createRace({ rules: { ...base, slug: "taken" } }));
    expect([taken.code, reasonOf(taken), taken.rawMessage, fieldViolations(taken)]).toEqual([
      Code.AlreadyExists,
      "SLUG_TAKEN",
      'another race of this affiliate already has the slug "taken"',
      [["rules.slug", 'another race of this affiliate already has the slug "taken"']],
    ]);
    const noId = await refusal(client.cancelRace({ id: "" }));
    expect([noId.code, fieldViolations(noId)]).toEqual([
      Code.InvalidArgument,
      [["id", "id is required (the race's id, race_…)"]],
    ]);
  });
});

describe("standings through the API", () => {
  const affiliate = "ra-ties";
  let key = "";

  beforeAll(async () => {
    key = (await createKey(servers.database.db, affiliate)).secret;
    await addBoard(servers.database.db, affiliate, [
      ["t-ann", "ann", "", ["500", START + 1]],
      ["t-cat", "cat", "", ["300", START + 2]],
      ["t-bea", "bea", "", ["299.99", START + 3], ["0.01", START + 4]],
      ["t-dan", "dan", "", ["300", START + 5]],
      ["t-eve", "eve", "", ["149.99999999", START + 6]],
      ["t-staff", "staff", "", ["1000000", START + 7]],
      // Before the race: not counted.
      ["t-early", "early", "", ["999999", START - 1]],
    ]);
  });

  it("splits a three-way tie across the last paid rank evenly, rounded down, the rest unallocated; excluded users and users under the minimum never appear", async () => {
    const client = races(key);
    const { race } = await client.createRace({
      rules: {
        slug: "ties",
        title: "Ties",
        startTimestamp: BigInt(START),
        endTimestamp: BigInt(END),
        prizes: ["100.00", "50.00", "30.00"],
        minWagered: "150",
        excludedUserIds: ["t-staff"],
      },
    });
    const got = await client.getRace({ idOrSlug: race?.id ?? "" });
    // bea, cat and dan share ranks 2 to 4: (50 + 30 + 0) / 3 = 26.666… → 26.66 each; 180 − 179.98 unallocated.
    // Users tied with the last one shown are shown too (shown defaults to the 3 prizes).
    expect(got.entries.map((e) => [e.rank, e.username, e.totalWageredDecimal, e.prize])).toEqual([
      [1, "ann", "500", "100.00"],
      [2, "bea", "300", "26.66"],
      [2, "cat", "300", "26.66"],
      [2, "dan", "300", "26.66"],
    ]);
    expect(got.unallocated).toBe("0.02");

    // shown 10: still nobody under the minimum, never the excluded user.
    await client.updateRace({ id: race?.id ?? "", shown: 10 });
    const all = await client.getRace({ idOrSlug: "ties" });
    expect(all.entries.map((e) => e.username)).toEqual(["ann", "bea", "cat", "dan"]);
    await client.updateRace({ id: race?.id ?? "", minWagered: "149.99999999" });
    const lower = await client.getRace({ idOrSlug: "ties" });
    expect(lower.entries.map((e) => [e.rank, e.username, e.prize])).toEqual([
      [1, "ann", "100.00"],
      [2, "bea", "26.66"],
      [2, "cat", "26.66"],
      [2, "dan", "26.66"],
      [5, "eve", "0.00"],
    ]);
  });
});

describe("the internal listener (ADMIN_TOKEN)", () => {
  it("acts for the affiliate the request names, which must be given", async () => {
    const admin = adminRaces(ADMIN_TOKEN, "grpc");
    const created = await admin.createRace({
      affiliateId: "ra-internal",
      rules: {
        slug: "monthly",
        title: "Monthly",
        startTimestamp: BigInt(START),
        repeat: RaceRepeat.MONTHLY,
        timeZone: "America/New_York",
        prizes: ["5000", "3000", "2000"],
      },
    });
    expect(created.race?.affiliateId).toBe("ra-internal");
    expect(created.race?.rules?.repeat).toBe(RaceRepeat.MONTHLY);
    const listed = await admin.listRaces({ affiliateId: "ra-internal" });
    expect(listed.races.map((r) => r.id)).toContain(created.race?.id);

    // The affiliate's own key sees it at once.
    const key = (await createKey(servers.database.db, "ra-internal")).secret;
    expect((await races(key).getRace({ idOrSlug: "monthly" })).race?.id).toBe(created.race?.id);

    const missing = await refusal(admin.listRaces({}));
    expect([missing.code, fieldViolations(missing)]).toEqual([
      Code.InvalidArgument,
      [
        [
          "affiliate_id",
          "affiliateId is required on the internal listener (the platform's affiliate id of 1 to 64 characters)",
        ],
      ],
    ]);
  });

  it("refuses no token, a wrong one and an affiliate key", async () => {
    const affiliateKey = (await createKey(servers.database.db, "ra-internal-key")).secret;
    for (const [token, message] of [
      [null, "missing or invalid admin token. Send Authorization Bearer with the ADMIN_TOKEN"],
      ["not-the-admin-token-at-all", "missing or invalid admin token. Send Authorization Bearer with the ADMIN_TOKEN"],
      [
        affiliateKey,
        "affiliate API keys are not accepted by the race service on the internal listener. Send Authorization Bearer with the ADMIN_TOKEN",
      ],
    ] as const) {
      const error = await refusal(adminRaces(token).listRaces({ affiliateId: "ra-internal" }));
      expect([error.code, error.rawMessage]).toEqual([Code.Unauthenticated, message]);
    }
  });

  it("is not served on the public port without a key", async () => {
    const error = await refusal(races(null).listRaces({}));
    expect(error.code).toBe(Code.Unauthenticated);
  });
});

describe("grpc-js on the published proto", () => {
  it("reads a race and gets not_found for another affiliate's, as a plain Node gRPC user would", async () => {
    const definition = protoLoader.loadSync("topwagers/v1/races.proto", {
      includeDirs: ["proto"],
      longs: String,
      enums: String,
      defaults: true,
    });
    const service = definition["topwagers.v1.RaceService"] as protoLoader.ServiceDefinition;
    const getRace = service.GetRace as protoLoader.MethodDefinition<object, object>;
    const key = (await createKey(servers.database.db, "ra-grpc-js")).secret;
    const id = (
      await races(key).createRace({
        rules: {
          slug: "grpc-js",
          title: "grpc-js",
          startTimestamp: BigInt(START),
          endTimestamp: BigInt(END),
          prizes: ["1.5"],
        },
      })
    ).race?.id;
    const client = new grpc.Client(new URL(servers.publicUrl).host, grpc.credentials.createInsecure());
    const call = (idOrSlug: string) =>
      new Promise<{ code: number; details: string; response: unknown }>((resolve) => {
        const metadata = new grpc.Metadata();
        metadata.set("authorization", `Bearer ${key}`);
        client.makeUnaryRequest(
          getRace.path,
          getRace.requestSerialize,
          getRace.responseDeserialize,
          { idOrSlug },
          metadata,
          (error, response) =>
            resolve({
              code: error?.code ?? 0,
              details: error?.details ?? "",
              response: JSON.parse(JSON.stringify(response ?? null)),
            }),
        );
      });
    try {
      const found = await call("grpc-js");
      expect(found.code).toBe(0);
      expect(found.response).toMatchObject({
        race: {
          id,
          state: "RACE_STATE_LIVE",
          startsAt: String(START),
          endsAt: String(END),
          rules: { prizes: ["1.5"] },
        },
        entries: [],
        unallocated: "1.5",
      });
      const missing = await call("race_aaaaaaaaaaaaaaaaaaaa");
      expect([missing.code, missing.details]).toEqual([
        grpc.status.NOT_FOUND,
        'this affiliate has no race "race_aaaaaaaaaaaaaaaaaaaa"',
      ]);
    } finally {
      client.close();
    }
  });
});
