/**
 * Live races on real sockets over MariaDB: the SSE stream (`GET /races/{slug}/stream`) and
 * WatchRace through connect-es. The first event is the race now; a wager that moves the standings
 * is sent within about a second; a race flips to final (with its digest) without a reconnect;
 * `Last-Event-ID` and `resume_version` send nothing until the race changes; a publishable key
 * may watch from `?key=`; refusals are the REST envelope (401, 404), never an event stream.
 */
import { createClient } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RaceService, RaceState, type WatchRaceResponse } from "../../gen/topwagers/v1/races_pb.js";
import { bearerConnect } from "../support/calls.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addBoard, addWagers, createKey } from "../support/fixtures.js";
import { RawHttp1Stream } from "../support/live.js";
import { raceNamed } from "../support/races.js";
import { startTestServer, type TestServer } from "../support/server.js";

const END = NOV_16 - 1;
const REVIEW = 60;
let clock = NOV_1 + 1_000;
let server: TestServer;
let secret = "";
let publishable = "";
let raceId = "";
const streams: RawHttp1Stream[] = [];

interface RaceData {
  readonly id: string;
  readonly state: string;
  readonly entries: { rank: number; username: string; totalWageredDecimal: string; prize: string }[];
  readonly result: { digest: string; frozenAt: number } | null;
  readonly version: string;
}

function open(path: string, headers: Record<string, string> = {}): RawHttp1Stream {
  const stream = new RawHttp1Stream(server.port, path, headers);
  streams.push(stream);
  return stream;
}

/** The race events received so far, parsed. */
function races(stream: RawHttp1Stream): { id: string | undefined; data: RaceData }[] {
  return (stream.reply?.events ?? [])
    .filter((e) => e.event === "race")
    .map((e) => ({ id: e.id, data: (JSON.parse(e.data ?? "") as { data: RaceData }).data }));
}

beforeAll(async () => {
  server = await startTestServer("races_live", {}, { now: () => clock });
  const db = server.database.db;
  secret = (await createKey(db, "live-aff")).secret;
  publishable = (await createKey(db, "live-aff", null, { publishable: true, allowedOrigins: [] })).secret;
  await addBoard(db, "live-aff", [
    ["u1", "alice", "", ["300", NOV_1 + 10]],
    ["u2", "bob", "", ["200", NOV_1 + 20]],
  ]);
  const [rows] = await db.read.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = 'live-aff'");
  const created = await server.app.races.create(
    Number(rows[0]?.id),
    raceNamed("weekly", "Live race", [NOV_1, END], {
      prizes: ["60", "40"],
      reviewSeconds: REVIEW,
    }),
  );
  if (created.kind !== "ok") throw new Error(JSON.stringify(created));
  raceId = created.value.race.id;
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await server?.close();
});

describe("the race SSE stream", () => {
  let stream: RawHttp1Stream;

  it("starts with the race now, as GET /races/{slug} answers it", async () => {
    stream = open("/races/weekly/stream", { authorization: `Bearer ${secret}` });
    const first = await stream.until((reply) => races(stream)[0] ?? (reply.ended ? null : undefined), 5_000, "first");
    expect(stream.reply?.status).toBe(200);
    expect(stream.reply?.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(stream.reply?.body.startsWith("retry: 2000\n\n")).toBe(true);
    expect(first?.id).toBe(first?.data.version);
    expect(first?.data.id).toBe(raceId);
    expect(first?.data.state).toBe("live");
    expect(first?.data.entries.map((e) => [e.rank, e.username, e.totalWageredDecimal, e.prize])).toEqual([
      [1, "alice", "300", "60"],
      [2, "bob", "200", "40"],
    ]);
  });

  it("sends the standings again when a wager moves them", async () => {
    await addWagers(server.database.db, [{ id: "late-1", userId: "u2", amount: "150.5", placedAt: NOV_1 + 30 }]);
    const second = await stream.until(() => races(stream)[1], 5_000, "second event");
    expect(second.data.entries.map((e) => [e.rank, e.username, e.totalWageredDecimal, e.prize])).toEqual([
      [1, "bob", "350.5", "60"],
      [2, "alice", "300", "40"],
    ]);
    expect(second.id).not.toBe(races(stream)[0]?.id);
  });

  it("resumes from Last-Event-ID with nothing until the race changes", async () => {
    const last = races(stream).at(-1)?.id ?? "";
    const resumed = open("/races/weekly/stream", { authorization: `Bearer ${secret}`, "last-event-id": last });
    await resumed.until((reply) => (reply.status === 200 ? true : undefined), 5_000, "resumed head");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(races(resumed)).toEqual([]);
    resumed.close();
  });

  it("flips to final with the digest, without a reconnect", async () => {
    clock = END + REVIEW + 1;
    expect((await server.app.races.tick()).frozen).toBe(1);
    const final = await stream.until(() => races(stream).find((e) => e.data.state === "final"), 5_000, "final");
    expect(final.data.result).toEqual({ digest: expect.stringMatching(/^[0-9a-f]{64}$/), frozenAt: END + REVIEW + 1 });
    expect(final.data.entries.map((e) => e.username)).toEqual(["bob", "alice"]);
  });

  it("lets a publishable key watch from ?key=", async () => {
    const viewer = open(`/races/${raceId}/stream?key=${publishable}`);
    const first = await viewer.until(() => races(viewer)[0], 5_000, "publishable first");
    expect(first.data.state).toBe("final");
  });

  it("refuses without a key and for an unknown race, with the REST envelope", async () => {
    const anonymous = await fetch(`${server.baseUrl}/races/weekly/stream`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const unknown = await fetch(`${server.baseUrl}/races/nope/stream`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { errors: { code: string }[] }).errors[0]?.code).toBe("not_found");
  });
});

describe("WatchRace", () => {
  it("streams the race, and nothing on resume until it changes", async () => {
    const client = createClient(RaceService, bearerConnect(server.baseUrl, secret));
    const abort = new AbortController();
    const received: WatchRaceResponse[] = [];
    for await (const message of client.watchRace({ idOrSlug: raceId }, { signal: abort.signal })) {
      received.push(message);
      break;
    }
    const first = received[0];
    expect(first?.heartbeat).toBe(false);
    expect(first?.race?.race?.state).toBe(RaceState.FINAL);
    expect(first?.race?.entries.map((e) => [e.rank, e.username, e.prize])).toEqual([
      [1, "bob", "60"],
      [2, "alice", "40"],
    ]);
    expect(first?.race?.race?.digest).toMatch(/^[0-9a-f]{64}$/);
    const resumedAbort = new AbortController();
    const resumed: WatchRaceResponse[] = [];
    const reading = (async () => {
      try {
        for await (const message of client.watchRace(
          { idOrSlug: raceId, resumeVersion: first?.version ?? "" },
          { signal: resumedAbort.signal },
        )) {
          resumed.push(message);
        }
      } catch {
        // Aborted below.
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    resumedAbort.abort();
    await reading;
    expect(resumed).toEqual([]);
  });
});

describe("race streams count against the stream limits", () => {
  it("refuses a race stream past STREAM_LIMIT_PER_ADDRESS, counted with the boards' streams, and frees it on close", async () => {
    const limited = await startTestServer("races_live_limits", { STREAM_LIMIT_PER_ADDRESS: "2" });
    const opened: RawHttp1Stream[] = [];
    try {
      const db = limited.database.db;
      const key = (await createKey(db, "limit-aff")).secret;
      await addBoard(db, "limit-aff", [["l1", "lea", "", ["5", NOV_1 + 5]]]);
      const [rows] = await db.read.query<RowDataPacket[]>("SELECT id FROM affiliates WHERE external_id = 'limit-aff'");
      const made = await limited.app.races.create(
        Number(rows[0]?.id),
        raceNamed("capped", "Capped", [NOV_1, END], {
          prizes: ["1"],
        }),
        [],
        undefined,
        // Over by the real clock: recorded on purpose.
        true,
      );
      expect(made.kind).toBe("ok");
      const headers = { authorization: `Bearer ${key}` };
      const open = (path: string) => {
        const s = new RawHttp1Stream(limited.port, path, headers);
        opened.push(s);
        return s;
      };
      const board = open(
        `/top-affiliate-wagers-by-period/stream?startTimestamp=${NOV_1}&endTimestamp=${END}&numUsers=3`,
      );
      await board.until((reply) => (reply.events.some((e) => e.event === "board") ? true : undefined));
      const race = open("/races/capped/stream");
      await race.until((reply) => (reply.events.some((e) => e.event === "race") ? true : undefined));
      const refused = await fetch(`${limited.baseUrl}/races/capped/stream`, { headers });
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({
        data: null,
        errors: [{ code: "resource_exhausted", message: "this client address has 2 streams open, the most allowed" }],
      });
      race.close();
      // The slot is free again once the server sees the close.
      const again = await (async () => {
        for (let i = 0; i < 50; i++) {
          const reply = open("/races/capped/stream");
          const status = await reply.until((r) => r.status);
          if (status === 200) return status;
          reply.close();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return 0;
      })();
      expect(again).toBe(200);
    } finally {
      for (const s of opened) s.close();
      await limited.close();
    }
  });
});
