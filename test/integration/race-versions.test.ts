/**
 * A race's version changes only with what the race shows (issue 35 item 7): watching a one-off race that
 * starts gives one `live` event over SSE and one over WatchRace (Connect), not a second identical one a
 * second later when the clock announces the start (its bookkeeping is not shown, so it is not versioned).
 * Real sockets, MariaDB, the service's own race watch polling every second; the test moves the clock.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RaceService, RaceState, type WatchRaceResponse } from "../../gen/topwagers/v1/races_pb.js";
import { bearerConnect } from "../support/calls.js";
import { NOV_1, NOV_16 } from "../support/dates.js";
import { addBoard, affiliateKey, createKey } from "../support/fixtures.js";
import { RawHttp1Stream } from "../support/live.js";
import { until } from "../support/polling.js";
import { startTestServer, type TestServer } from "../support/server.js";

const START = NOV_1 + 3_600;
let clock = START - 30;
let server: TestServer;
let secret = "";
const abort = new AbortController();
let sse: RawHttp1Stream | undefined;
const rpc: WatchRaceResponse[] = [];
let reading: Promise<void> = Promise.resolve();

/** The SSE stream's race events as [state, event id]. */
function sseRaces(): [string, string | undefined][] {
  return (sse?.reply?.events ?? [])
    .filter((e) => e.event === "race")
    .map((e) => [(JSON.parse(e.data ?? "") as { data: { state: string } }).data.state, e.id]);
}

/** WatchRace's races (heartbeats left out) as [state, version]. */
function rpcRaces(): [string, string][] {
  return rpc
    .filter((m) => !m.heartbeat)
    .map((m) => [RaceState[m.race?.race?.state ?? RaceState.UNSPECIFIED] ?? "", m.version]);
}

beforeAll(async () => {
  server = await startTestServer("race_versions", {}, { now: () => clock });
  const db = server.database.db;
  secret = (await createKey(db, "versions-aff")).secret;
  await addBoard(db, "versions-aff", [["u1", "alice", "", ["300", START + 10]]]);
  const created = await server.app.races.create(await affiliateKey(db.read, "versions-aff"), {
    slug: "one-off",
    title: "One-off race",
    startTimestamp: START,
    endTimestamp: NOV_16 - 1,
    prizes: ["60", "40"],
  });
  if (created.kind !== "ok") throw new Error(JSON.stringify(created));
});

afterAll(async () => {
  abort.abort();
  await reading;
  sse?.close();
  await server?.close();
});

describe("a race that starts", () => {
  it("is sent once as live over SSE and over WatchRace, also after the clock announces the start", async () => {
    sse = new RawHttp1Stream(server.port, "/races/one-off/stream", { authorization: `Bearer ${secret}` });
    const client = createClient(RaceService, bearerConnect(server.baseUrl, secret));
    reading = (async () => {
      try {
        for await (const message of client.watchRace({ idOrSlug: "one-off" }, { signal: abort.signal })) {
          rpc.push(message);
        }
      } catch {
        // Aborted at the end.
      }
    })();
    await until(
      "both scheduled",
      async () => [sseRaces().length, rpcRaces().length],
      ([a, b]) => a === 1 && b === 1,
    );
    clock = START;
    await until(
      "both live",
      async () => [sseRaces().length, rpcRaces().length],
      ([a, b]) => a === 2 && b === 2,
    );
    // The clock's tick one second later announces the start (race.started): nothing a viewer sees changes.
    clock = START + 1;
    expect((await server.app.races.tick()).started).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const sent = sseRaces();
    expect(sent.map(([state]) => state)).toEqual(["scheduled", "live"]);
    expect(rpcRaces().map(([state]) => state)).toEqual(["SCHEDULED", "LIVE"]);
    // The same version names the same race on both protocols.
    expect(rpcRaces().map(([, version]) => version)).toEqual(sent.map(([, id]) => id));
  }, 20_000);
});
