/**
 * The races' REST reads on a real socket over MariaDB, with races written as the docs write them
 * (Connect's JSON POST): GET {BASE_PATH}/races/{slug-or-id} in the exact shape of docs/api.md (totals
 * as JSON numbers with every digit beside their decimal strings, prizes and `unallocated` as strings),
 * GET {BASE_PATH}/races by page and by state; admission like the live stream's (Authorization, or a
 * publishable key in ?key=, CORS for its origins, a secret key in the URL refused); 404 for another
 * affiliate's race; 400 naming the query parameter; a three-way tie across the last paid rank; the
 * result once final with a digest recomputed here from the answer by the documented recipe.
 */
import { createHash } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { addBoard, addUsers, addWagers, createKey } from "../support/fixtures.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";
import { OpenApiChecker } from "../support/openapi.js";
import { prizeRows } from "../support/races.js";
import { type RestReply, raceServiceCall, restCall } from "../support/rest.js";

const BASE = "/api";
const ORIGIN = "https://board.example.com";
const NOW = Math.floor(Date.now() / 1000);
const START = NOW - 3_600;
const END = NOW + 7 * 86_400;

const servers = useIngestServers("races_rest", {
  INGEST_TOKEN: TEST_INGEST_TOKEN,
  BASE_PATH: BASE,
  CACHE_TTL_MS: "10000",
});

/** A RaceService call as curl makes it: Connect's JSON POST with the secret key. */
function connectCall(key: string, method: string, body: object): Promise<Record<string, unknown>> {
  return raceServiceCall(servers.publicUrl, key, method, body);
}

/** Some races here ended before they are made (final or in review at once): `allowPast` records them. */
async function createRace(key: string, rules: object): Promise<string> {
  const answer = await connectCall(key, "CreateRace", { rules, allowPast: true });
  return (answer.race as { id: string }).id;
}

let checker: OpenApiChecker;

beforeAll(async () => {
  checker = await OpenApiChecker.load();
});

/** A GET of a races path; every answer of the two documented paths is checked against docs/openapi.yaml. */
async function get(
  path: string,
  options: { key?: string | null; headers?: Record<string, string> } = {},
): Promise<RestReply> {
  const reply = await restCall(`${servers.publicUrl}${BASE}${path}`, { method: "GET", ...options });
  const route = path.split("?")[0] ?? "";
  const documented = route === "/races" ? "/races" : /^\/races\/[^/]+$/.test(route) ? "/races/{slugOrId}" : undefined;
  if (documented !== undefined) expect(checker.check(documented, "get", reply), reply.text).toEqual([]);
  return reply;
}

function data(reply: RestReply): Record<string, unknown> {
  expect([reply.status, (reply.json as { errors: unknown }).errors]).toEqual([200, null]);
  return (reply.json as { data: Record<string, unknown> }).data;
}

describe("GET /races/{slug-or-id}", () => {
  it("answers the race with its standings in the documented shape, by slug and by id", async () => {
    const key = (await createKey(servers.database.db, "rr-shape")).secret;
    await addBoard(servers.database.db, "rr-shape", [
      ["s-alice", "alice", "https://img.example/alice.png", ["1234.5", START + 1]],
      ["s-bob", "bob", "", ["0.00000001", START + 2], ["99", START + 3]],
    ]);
    const id = await createRace(key, {
      slug: "monthly",
      title: "$10,000 monthly race",
      startTimestamp: String(START),
      endTimestamp: String(END),
      prizes: ["5000.00", "3000.00", "2000.00"],
    });
    const reply = await get("/races/monthly", { key });
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(reply.headers["cache-control"]).toBe("private, max-age=1");
    expect(reply.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+$/);
    const body = data(reply);
    expect(body.now).toBeGreaterThanOrEqual(NOW);
    expect(body.version).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(body).toEqual({
      id,
      slug: "monthly",
      title: "$10,000 monthly race",
      state: "live",
      startTimestamp: START,
      endTimestamp: END,
      rankBy: "wagered",
      currency: "USD",
      prizes: ["5000.00", "3000.00", "2000.00"],
      minWagered: "0",
      shown: 3,
      reviewSeconds: 86_400,
      repeat: "none",
      timeZone: "UTC",
      startsAt: START,
      endsAt: END,
      finalAt: END + 86_400,
      now: body.now,
      next: null,
      entries: [
        {
          rank: 1,
          username: "alice",
          avatar: "https://img.example/alice.png",
          totalWagered: 1234.5,
          totalWageredDecimal: "1234.5",
          prize: "5000.00",
        },
        {
          rank: 2,
          username: "bob",
          avatar: DEFAULT_AVATAR_URL,
          totalWagered: 99.00000001,
          totalWageredDecimal: "99.00000001",
          prize: "3000.00",
        },
      ],
      unallocated: "2000.00",
      version: body.version,
      result: null,
      log: null,
    });
    // The number is written with every digit (never through a float).
    expect(reply.text).toContain('"totalWagered":99.00000001,"totalWageredDecimal":"99.00000001"');

    const byId = data(await get(`/races/${id}`, { key }));
    expect({ ...byId, now: 0 }).toEqual({ ...body, now: 0 });
    // Nothing changed: the same version.
    expect(byId.version).toBe(body.version);
  });

  it("adds the weighted totals in a weighted race", async () => {
    const key = (await createKey(servers.database.db, "rr-weighted")).secret;
    await addUsers(servers.database.db, [{ id: "w-ann", affiliateId: "rr-weighted", username: "ann", avatar: "" }]);
    await addWagers(servers.database.db, [
      { id: "rr-w1", userId: "w-ann", amount: "100", placedAt: START + 1, weightBps: 2_500 },
      { id: "rr-w2", userId: "w-ann", amount: "10.5", placedAt: START + 2 },
    ]);
    await createRace(key, {
      slug: "weighted",
      title: "Slots only",
      startTimestamp: String(START),
      endTimestamp: String(END),
      rankBy: "RANK_BY_WEIGHTED",
      prizes: ["10"],
    });
    const body = data(await get("/races/weighted", { key }));
    expect([body.rankBy, body.entries]).toEqual([
      "weighted",
      [
        {
          rank: 1,
          username: "ann",
          avatar: DEFAULT_AVATAR_URL,
          totalWagered: 110.5,
          totalWageredDecimal: "110.5",
          weightedWagered: 35.5,
          weightedWageredDecimal: "35.5",
          prize: "10",
        },
      ],
    ]);
  });

  it("splits a three-way tie across the last paid rank; excluded users and users under the minimum never appear", async () => {
    const key = (await createKey(servers.database.db, "rr-ties")).secret;
    await addBoard(servers.database.db, "rr-ties", [
      ["t-1", "ann", "", ["70", START + 1]],
      ["t-2", "bea", "", ["40", START + 2]],
      ["t-3", "cat", "", ["40", START + 3]],
      ["t-4", "dan", "", ["40", START + 4]],
      ["t-5", "eve", "", ["9.99", START + 5]],
      ["t-6", "streamer", "", ["5000", START + 6]],
    ]);
    await createRace(key, {
      slug: "ties",
      title: "Ties",
      startTimestamp: String(START),
      endTimestamp: String(END),
      prizes: ["50", "30", "20", "10"],
      minWagered: "10",
      excludedUserIds: ["t-6"],
      shown: 10,
    });
    const body = data(await get("/races/ties", { key }));
    // bea, cat and dan occupy ranks 2 to 4: (30 + 20 + 10) / 3 = 20 each, nothing left over; eve is under the
    // minimum and the streamer excluded.
    expect(prizeRows(body.entries)).toEqual([
      [1, "ann", "50"],
      [2, "bea", "20"],
      [2, "cat", "20"],
      [2, "dan", "20"],
    ]);
    expect(body.unallocated).toBe("0");

    await createRace(key, {
      slug: "ties-uneven",
      title: "Ties, uneven",
      startTimestamp: String(START),
      endTimestamp: String(END),
      prizes: ["100.00", "50.00", "30.00"],
      minWagered: "10",
      excludedUserIds: ["t-6"],
    });
    const uneven = data(await get("/races/ties-uneven", { key }));
    expect(prizeRows(uneven.entries)).toEqual([
      [1, "ann", "100.00"],
      [2, "bea", "26.66"],
      [2, "cat", "26.66"],
      [2, "dan", "26.66"],
    ]);
    expect(uneven.unallocated).toBe("0.02");
  });

  it("shows the frozen result once final, with a digest anyone can recompute from the answer", async () => {
    const key = (await createKey(servers.database.db, "rr-final")).secret;
    await addBoard(servers.database.db, "rr-final", [
      ["f-1", 'zoë "z"', "", ["12.5", START - 7_000]],
      ["f-2", "yan", "", ["12.50", START - 6_999]],
      ["f-3", "xi", "", ["3", START - 6_998]],
    ]);
    const id = await createRace(key, {
      slug: "done",
      title: "Done",
      startTimestamp: String(START - 7_200),
      endTimestamp: String(START - 3_600),
      prizes: ["10.00", "5.00"],
      reviewSeconds: 0,
    });
    // The clock (server.ts runs it every RACE_CLOCK_MS) announces the start and the end and freezes the race.
    await servers.app.races.tick();
    await servers.app.races.tick();
    const reply = await get(`/races/${id}`, { key });
    const body = data(reply);
    const result = body.result as { digest: string; frozenAt: number };
    expect(body.state).toBe("final");
    expect(result.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(result.frozenAt).toBeGreaterThanOrEqual(NOW);
    expect(body.entries).toEqual([
      {
        rank: 1,
        username: "yan",
        avatar: DEFAULT_AVATAR_URL,
        totalWagered: 12.5,
        totalWageredDecimal: "12.5",
        prize: "7.50",
      },
      {
        rank: 1,
        username: 'zoë "z"',
        avatar: DEFAULT_AVATAR_URL,
        totalWagered: 12.5,
        totalWageredDecimal: "12.5",
        prize: "7.50",
      },
    ]);
    expect(body.unallocated).toBe("0.00");

    // docs/api.md "Races": the digest's recipe, followed from the REST answer alone.
    const canonical = (text: string) => text.replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
    type Entry = { rank: number; username: string; totalWageredDecimal: string; prize: string };
    const text = JSON.stringify({
      raceId: body.id,
      slug: body.slug,
      startTimestamp: body.startTimestamp,
      endTimestamp: body.endTimestamp,
      rankBy: body.rankBy,
      currency: body.currency,
      entries: (body.entries as Entry[]).map((e) => ({
        rank: e.rank,
        username: e.username,
        wagered: canonical(e.totalWageredDecimal),
        weighted: null,
        prize: canonical(e.prize),
      })),
      unallocated: canonical(body.unallocated as string),
    });
    expect(createHash("sha256").update(text, "utf8").digest("hex")).toBe(result.digest);
  });

  it("answers 404 for no race and for another affiliate's race, the same way", async () => {
    const key = (await createKey(servers.database.db, "rr-mine")).secret;
    const otherKey = (await createKey(servers.database.db, "rr-other")).secret;
    const theirs = await createRace(otherKey, {
      slug: "theirs",
      title: "Theirs",
      startTimestamp: String(START),
      endTimestamp: String(END),
    });
    for (const [path, name] of [
      [`/races/${theirs}`, theirs],
      ["/races/theirs", "theirs"],
      ["/races/nothing-here", "nothing-here"],
    ] as const) {
      const reply = await get(path, { key });
      expect([reply.status, reply.headers["cache-control"], reply.json]).toEqual([
        404,
        "no-store",
        {
          data: null,
          errors: [{ code: "not_found", message: `this affiliate has no race "${name}"` }],
        },
      ]);
    }
  });
});

describe("GET /races", () => {
  it("lists newest start first, without standings, by page and by state", async () => {
    const key = (await createKey(servers.database.db, "rr-list")).secret;
    const old = await createRace(key, {
      slug: "old",
      title: "Old",
      startTimestamp: String(START - 86_400),
      endTimestamp: String(START - 1),
    });
    const live = await createRace(key, {
      slug: "live",
      title: "Live",
      startTimestamp: String(START),
      endTimestamp: String(END),
    });
    const soon = await createRace(key, {
      slug: "soon",
      title: "Soon",
      startTimestamp: String(END + 1),
      endTimestamp: String(END + 86_400),
    });

    const all = data(await get("/races", { key }));
    const races = all.races as Record<string, unknown>[];
    expect(races.map((r) => [r.id, r.state])).toEqual([
      [soon, "scheduled"],
      [live, "live"],
      [old, "reviewing"],
    ]);
    expect(all.nextPageToken).toBe("");
    expect(Object.keys(races[1] ?? {})).toEqual([
      "id",
      "slug",
      "title",
      "state",
      "startTimestamp",
      "endTimestamp",
      "rankBy",
      "currency",
      "prizes",
      "minWagered",
      "shown",
      "reviewSeconds",
      "repeat",
      "timeZone",
      "startsAt",
      "endsAt",
      "finalAt",
      "now",
      "result",
    ]);

    const first = data(await get("/races?pageSize=2", { key }));
    expect((first.races as { id: string }[]).map((r) => r.id)).toEqual([soon, live]);
    expect(first.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = data(await get(`/races?pageSize=2&pageToken=${first.nextPageToken}`, { key }));
    expect([(second.races as { id: string }[]).map((r) => r.id), second.nextPageToken]).toEqual([[old], ""]);

    const byState = data(await get("/races?state=scheduled&state=reviewing", { key }));
    expect((byState.races as { id: string }[]).map((r) => r.id)).toEqual([soon, old]);
    const bySlug = data(await get("/races?slug=live", { key }));
    expect((bySlug.races as { id: string }[]).map((r) => r.id)).toEqual([live]);
  });

  it("names the query parameter at fault", async () => {
    const key = (await createKey(servers.database.db, "rr-list-bad")).secret;
    const reply = await get("/races?state=running&pageSize=ten", { key });
    expect([reply.status, reply.json]).toEqual([
      400,
      {
        data: null,
        errors: [
          {
            code: "invalid_argument",
            message:
              'state must be one of scheduled live reviewing final cancelled (repeat it for several), got "running"',
            field: "state",
          },
          {
            code: "invalid_argument",
            message: 'pageSize must be a whole number from 1 to 100, got "ten"',
            field: "pageSize",
          },
        ],
      },
    ]);
    const big = await get("/races?pageSize=101", { key });
    expect([big.status, big.json]).toEqual([
      400,
      {
        data: null,
        errors: [{ code: "invalid_argument", message: "pageSize must be between 1 and 100", field: "pageSize" }],
      },
    ]);
  });
});

describe("admission", () => {
  it("takes a publishable key in ?key= with CORS for its origins, and refuses a secret key there", async () => {
    const secret = (await createKey(servers.database.db, "rr-pub")).secret;
    const publishable = (
      await createKey(servers.database.db, "rr-pub", null, { publishable: true, allowedOrigins: [ORIGIN] })
    ).secret;
    await createRace(secret, { slug: "pub", title: "Pub", startTimestamp: String(START), endTimestamp: String(END) });

    const fromPage = await get(`/races/pub?key=${publishable}`, { headers: { origin: ORIGIN } });
    expect(data(fromPage).slug).toBe("pub");
    expect([fromPage.headers["access-control-allow-origin"], fromPage.headers.vary]).toEqual([
      ORIGIN,
      "Accept-Encoding, Origin",
    ]);
    const list = await get(`/races?key=${publishable}`, { headers: { origin: "https://elsewhere.example" } });
    expect([list.status, list.headers["access-control-allow-origin"]]).toEqual([200, undefined]);

    const preflight = await restCall(`${servers.publicUrl}${BASE}/races/pub`, {
      method: "OPTIONS",
      headers: {
        origin: ORIGIN,
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization",
      },
    });
    expect([preflight.status, preflight.headers["access-control-allow-origin"]]).toEqual([204, ORIGIN]);
    const refused = await restCall(`${servers.publicUrl}${BASE}/races`, {
      method: "OPTIONS",
      headers: { origin: "https://elsewhere.example", "access-control-request-method": "GET" },
    });
    expect(refused.status).toBe(403);

    const inUrl = await get(`/races/pub?key=${secret}`);
    expect([inUrl.status, (inUrl.json as { errors: { code: string }[] }).errors[0]?.code]).toEqual([
      401,
      "unauthenticated",
    ]);
    const none = await get("/races/pub");
    expect([none.status, none.headers["www-authenticate"]]).toEqual([401, 'Bearer realm="topwagers"']);
  });

  it("counts each read against the key's rate limit, as every call: 429 with Retry-After once it is used up", async () => {
    const key = (await createKey(servers.database.db, "rr-limit", { points: 2, windowSeconds: 60 })).secret;
    const first = await get("/races", { key });
    expect([first.status, first.headers["ratelimit-policy"], first.headers.ratelimit]).toEqual([
      200,
      '"key";q=2;w=60',
      '"key";r=1;t=60',
    ]);
    expect((await get("/races/any", { key })).status).toBe(404);
    const limited = await get("/races", { key });
    expect([limited.status, (limited.json as { errors: { code: string }[] }).errors[0]?.code]).toEqual([
      429,
      "resource_exhausted",
    ]);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("refuses a key without races:read with 403 naming the scope", async () => {
    const key = (await createKey(servers.database.db, "rr-scope", null, {}, ["boards:read"])).secret;
    for (const path of ["/races", "/races/any"]) {
      const reply = await get(path, { key });
      expect([reply.status, reply.json]).toEqual([
        403,
        { data: null, errors: [{ code: "permission_denied", message: "this API key lacks the scope races:read" }] },
      ]);
    }
  });

  it("answers GET only, gzip when asked, and 404 below a race's path", async () => {
    const key = (await createKey(servers.database.db, "rr-http")).secret;
    await createRace(key, { slug: "http", title: "Http", startTimestamp: String(START), endTimestamp: String(END) });
    const post = await restCall(`${servers.publicUrl}${BASE}/races/http`, { key, body: {} });
    expect([post.status, post.headers.allow, post.json]).toEqual([
      405,
      "GET, DELETE",
      { data: null, errors: [{ code: "method_not_allowed", message: `use GET or DELETE for ${BASE}/races/{slug}` }] },
    ]);
    const response = await fetch(`${servers.publicUrl}${BASE}/races/http`, {
      headers: { authorization: `Bearer ${key}`, "accept-encoding": "gzip" },
    });
    const bytes = Buffer.from(await response.arrayBuffer());
    expect(response.headers.get("content-encoding")).toBe("gzip");
    // fetch decodes gzip itself; either way the body is the race.
    const text = bytes[0] === 0x1f ? gunzipSync(bytes).toString("utf8") : bytes.toString("utf8");
    expect((JSON.parse(text) as { data: { slug: string } }).data.slug).toBe("http");
    const below = await get("/races/http/anything/else", { key });
    expect(below.status).toBe(404);
  });
});
