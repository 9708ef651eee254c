/**
 * Live boards ranked by weight: the watch RPC takes rank_by and the SSE
 * stream takes ?rankBy=, each board is what the POST answers with the same
 * ranking (SSE: the same body, with weightedWagered when rankBy is named),
 * a change that reorders the weighted board reaches the weighted streams, and
 * a bad rankBy is refused as the POST refuses it.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  RankBy,
  TopWagersService,
  WatchTopAffiliateWagersByPeriodRequestSchema,
  type WatchTopAffiliateWagersByPeriodResponse,
} from "../../gen/topwagers/v1/top_wagers_pb.js";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { boardEvents, RawHttp1Stream } from "../support/live.js";
import { whenDefined } from "../support/polling.js";

let servers: IngestServers;
let key = "";
const streams: { close(): void }[] = [];
const AVATAR = (id: string) => `https://avatars.example.com/${id}.png`;

async function record(id: string, userId: string, amount: string, weightBps: number): Promise<void> {
  await servers.client("grpc").recordWagers({
    wagers: [{ id, userId, amount, placedAt: BigInt(JAN_1_2025 + 7200), weightBps }],
  });
}

beforeAll(async () => {
  servers = await startIngestServers("weighted_live", { INGEST_TOKEN: TEST_INGEST_TOKEN });
  key = (await createKey(servers.database.db, "aff-wl")).secret;
  await servers.client("grpc").upsertUsers({
    users: [
      { id: "wl-a", affiliateId: "aff-wl", username: "ada", avatar: AVATAR("wl-a") },
      { id: "wl-b", affiliateId: "aff-wl", username: "bea", avatar: AVATAR("wl-b") },
    ],
  });
  // ada 100 at 10 % (weighted 10), bea 50 at 100 %: ada leads by total, bea by weight.
  await record("wl-1", "wl-a", "100", 1000);
  await record("wl-2", "wl-b", "50", 10_000);
}, 60_000);

afterAll(async () => {
  for (const stream of streams) stream.close();
  await servers?.close();
});

/** The POST's body for January, as the reference each live board must equal. */
async function postBody(rankBy?: string): Promise<string> {
  const response = await fetch(`${servers.publicUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ ...JANUARY, ...(rankBy === undefined ? {} : { rankBy }) }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** A connect-es watch, collecting every message. */
function watch(rankBy?: RankBy): { messages: WatchTopAffiliateWagersByPeriodResponse[]; ended: Promise<unknown> } {
  const client = createClient(
    TopWagersService,
    createConnectTransport({ baseUrl: servers.publicUrl, httpVersion: "1.1" }),
  );
  const abort = new AbortController();
  streams.push({ close: () => abort.abort() });
  const messages: WatchTopAffiliateWagersByPeriodResponse[] = [];
  const request = create(WatchTopAffiliateWagersByPeriodRequestSchema, {
    startTimestamp: BigInt(JANUARY.startTimestamp),
    endTimestamp: BigInt(JANUARY.endTimestamp),
    numUsers: JANUARY.numUsers,
    ...(rankBy === undefined ? {} : { rankBy }),
  });
  const ended = (async () => {
    try {
      for await (const message of client.watchTopAffiliateWagersByPeriod(request, {
        headers: { authorization: `Bearer ${key}` },
        signal: abort.signal,
      })) {
        if (!message.heartbeat) messages.push(message);
      }
      return undefined;
    } catch (error) {
      return error;
    }
  })();
  return { messages, ended };
}

const until = <T>(ready: () => T | undefined, what: string, timeoutMs = 5_000) => whenDefined(what, ready, timeoutMs);

function sse(query: string): RawHttp1Stream {
  const port = Number(new URL(servers.publicUrl).port);
  const path = `/top-affiliate-wagers-by-period/stream?startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=${JANUARY.numUsers}${query}`;
  const stream = new RawHttp1Stream(port, path, { authorization: `Bearer ${key}`, accept: "text/event-stream" });
  streams.push(stream);
  return stream;
}

const entries = (m: WatchTopAffiliateWagersByPeriodResponse) =>
  m.data.map((e) => [e.username, e.totalWageredDecimal, e.weightedWageredDecimal, e.rank]);

describe("live boards ranked by weight", () => {
  it("watch: rank_by orders the stream's boards, each with both totals; a reorder reaches it", async () => {
    const weighted = watch(RankBy.WEIGHTED);
    const plain = watch();
    await until(() => weighted.messages[0], "the first weighted board");
    await until(() => plain.messages[0], "the first plain board");
    expect(entries(weighted.messages[0] as WatchTopAffiliateWagersByPeriodResponse)).toEqual([
      ["bea", "50", "50", 1],
      ["ada", "100", "10", 2],
    ]);
    expect(entries(plain.messages[0] as WatchTopAffiliateWagersByPeriodResponse)).toEqual([
      ["ada", "100", "10", 1],
      ["bea", "50", "50", 2],
    ]);
    expect(weighted.messages[0]?.version).not.toBe(plain.messages[0]?.version);

    const sseWeighted = sse("&rankBy=weighted");
    const ssePlain = sse("");
    const sseWagered = sse("&rankBy=wagered");
    for (const [stream, rankBy] of [
      [sseWeighted, "weighted"],
      [ssePlain, undefined],
      [sseWagered, "wagered"],
    ] as const) {
      const first = await stream.until((reply) => boardEvents(reply)[0], 5_000, "the first SSE board");
      expect(JSON.stringify(first.data)).toBe(await postBody(rankBy));
    }

    // ada's 500 at 10 % takes the weighted lead (60 > 50): the weighted streams get a new board.
    await record("wl-3", "wl-a", "500", 1000);
    expect(entries(await until(() => weighted.messages[1], "the reordered weighted board"))).toEqual([
      ["ada", "600", "60", 1],
      ["bea", "50", "50", 2],
    ]);
    const next = await sseWeighted.until((reply) => boardEvents(reply)[1], 5_000, "the second SSE board");
    expect(JSON.stringify(next.data)).toBe(await postBody("weighted"));
    expect(JSON.stringify(next.data)).toBe(
      `{"data":[{"username":"ada","avatar":"${AVATAR("wl-a")}","totalWagered":600,"weightedWagered":60},` +
        `{"username":"bea","avatar":"${AVATAR("wl-b")}","totalWagered":50,"weightedWagered":50}],"errors":null}`,
    );
  });

  it("refuses a bad rankBy as the POST does: 400 on SSE, invalid_argument on the watch", async () => {
    const bad = sse("&rankBy=WEIGHTED");
    const reply = await bad.until((r) => (r.ended ? r : undefined), 5_000, "the refusal");
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toEqual({
      data: null,
      errors: [
        {
          code: "invalid_argument",
          message: 'rankBy must be "wagered" or "weighted", got "WEIGHTED"',
          field: "rankBy",
        },
      ],
    });
    const refused = watch(9 as RankBy);
    const error = await refused.ended;
    expect(error).toBeInstanceOf(ConnectError);
    expect([(error as ConnectError).code, (error as ConnectError).rawMessage]).toEqual([
      Code.InvalidArgument,
      "rankBy must be RANK_BY_WAGERED or RANK_BY_WEIGHTED (got 9)",
    ]);
  });
});
