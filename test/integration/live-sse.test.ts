/**
 * The SSE stream `GET /top-affiliate-wagers-by-period/stream`, read raw over
 * HTTP/1.1 (a TCP socket, chunked decoding by hand) and h2c (node:http2):
 * exact headers and bytes (`retry: 2000`, `event: board`, `id: <version>`,
 * `data:` equal to the POST's body), a recorded wager on both within 1.5 s,
 * heartbeats, Last-Event-ID, the POST's refusals as JSON (never an event
 * stream), and a viewer that stops reading is disconnected while another
 * keeps receiving.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JAN_1_2025, JANUARY } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";
import { boardEvents, metricSample, RawHttp1Stream, RawHttp2Stream, type RawReply } from "../support/live.js";
import { OpenApiChecker } from "../support/openapi.js";
import { OPERATION, restTop } from "../support/rest.js";

const STREAM = `${OPERATION}/stream`;
const QUERY = `startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=10`;

let servers: IngestServers;
let key = "";
let port = 0;
let session: http2.ClientHttp2Session;
const opened: { close(): void }[] = [];
let wagerNumber = 0;

function h1(path: string, headers: Record<string, string> = { authorization: `Bearer ${key}` }, read = true) {
  const stream = new RawHttp1Stream(port, path, headers, { read });
  opened.push(stream);
  return stream;
}

function h2(path: string, headers: Record<string, string> = { authorization: `Bearer ${key}` }) {
  const stream = new RawHttp2Stream(session, path, headers);
  opened.push(stream);
  return stream;
}

async function record(userId: string, amount: string): Promise<void> {
  wagerNumber += 1;
  await servers.client("grpc").recordWagers({
    wagers: [{ id: `sse-w${wagerNumber}`, userId, amount, placedAt: BigInt(JAN_1_2025 + 120) }],
  });
}

const boardCount = (reply: RawReply) => boardEvents(reply).length;
let checker: OpenApiChecker;
/** Problems of a reply as an answer of the stream path in docs/openapi.yaml. */
const documented = (reply: RawReply) =>
  checker.check(STREAM, "get", { status: reply.status, headers: reply.headers, text: reply.body });

beforeAll(async () => {
  servers = await startIngestServers("live_sse", {
    INGEST_TOKEN: TEST_INGEST_TOKEN,
    STREAM_HEARTBEAT_S: "1",
    STREAM_LIMIT_PER_ADDRESS: "1000",
  });
  port = Number(new URL(servers.publicUrl).port);
  checker = await OpenApiChecker.load();
  session = http2.connect(servers.publicUrl);
  key = (await createKey(servers.database.db, "aff-sse")).secret;
  await servers.client("grpc").upsertUsers({
    users: [
      { id: "sse-1", affiliateId: "aff-sse", username: 'quote " and \\ back', avatar: "" },
      { id: "sse-2", affiliateId: "aff-sse", username: "line\u2028sep <script>", avatar: "https://img.example/2.png" },
    ],
  });
  await record("sse-1", "12.00000001");
  await record("sse-2", "7");
}, 60_000);

afterAll(async () => {
  for (const stream of opened) stream.close();
  session?.destroy();
  await servers?.close();
});

describe("SSE stream", () => {
  let first1: RawHttp1Stream;
  let first2: RawHttp2Stream;

  it("answers text/event-stream on HTTP/1.1 and h2c: retry first, then the board as the POST's body", async () => {
    first1 = h1(`${STREAM}?${QUERY}`);
    first2 = h2(`${STREAM}?${QUERY}`);
    const posted = await restTop(servers.publicUrl, key, JANUARY);
    for (const stream of [first1, first2]) {
      const reply = await stream.until((r) => (boardCount(r) >= 1 ? r : undefined));
      expect(reply.status).toBe(200);
      expect(reply.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
      expect(reply.headers["cache-control"]).toBe("no-store");
      expect(reply.headers["x-accel-buffering"]).toBe("no");
      expect(reply.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
      const [board] = boardEvents(reply);
      expect(board?.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(reply.body).toBe(`retry: 2000\n\nevent: board\nid: ${board?.id}\ndata: ${posted.text}\n\n`);
      expect(documented(reply)).toEqual([]);
    }
    expect(posted.json).toEqual({
      data: [
        { username: 'quote " and \\ back', avatar: servers.config.defaultAvatarUrl, totalWagered: 12.00000001 },
        { username: "line\u2028sep <script>", avatar: "https://img.example/2.png", totalWagered: 7 },
      ],
      errors: null,
    });
    expect(first1.reply?.headers["transfer-encoding"]).toBe("chunked");
  });

  it("sends a recorded wager on both within 1.5 s, with the POST's body", async () => {
    const since = performance.now();
    await record("sse-2", "10");
    const arrived = await Promise.all(
      [first1, first2].map((s) => s.until((r) => (boardCount(r) >= 2 ? performance.now() : undefined))),
    );
    for (const at of arrived) expect(at - since).toBeLessThanOrEqual(1_500);
    const posted = await restTop(servers.publicUrl, key, JANUARY);
    for (const stream of [first1, first2]) {
      const events = boardEvents(stream.reply as RawReply);
      expect(JSON.stringify(events[1]?.data)).toBe(posted.text);
      expect((events[1]?.data as { data: { username: string }[] } | undefined)?.data[0]?.username).toBe(
        "line\u2028sep <script>",
      );
    }
  });

  it("sends `: heartbeat` after STREAM_HEARTBEAT_S without a board", async () => {
    for (const stream of [first1, first2]) {
      const reply = await stream.until((r) => (r.events.some((e) => e.comment === "heartbeat") ? r : undefined), 3_000);
      expect(reply.body).toContain("\n\n: heartbeat\n\n");
    }
  });

  it("resumes from Last-Event-ID: the current id sends no board until a change, an old one sends the board at once", async () => {
    const events = boardEvents(first1.reply as RawReply);
    const current = events.at(-1)?.id as string;
    const resumed = h1(`${STREAM}?${QUERY}`, { authorization: `Bearer ${key}`, "last-event-id": current });
    const resumed2 = h2(`${STREAM}?${QUERY}`, { authorization: `Bearer ${key}`, "last-event-id": current });
    const stale = h1(`${STREAM}?${QUERY}`, {
      authorization: `Bearer ${key}`,
      "last-event-id": events[0]?.id as string,
    });
    for (const stream of [resumed, resumed2]) {
      const reply = await stream.until((r) => (r.events.some((e) => e.comment === "heartbeat") ? r : undefined), 3_000);
      expect(reply.status).toBe(200);
      expect(reply.body.startsWith("retry: 2000\n\n: heartbeat\n\n")).toBe(true);
      expect(boardCount(reply)).toBe(0);
    }
    expect(boardEvents(await stale.until((r) => (boardCount(r) >= 1 ? r : undefined)))[0]?.id).toBe(current);
    await record("sse-1", "1");
    for (const stream of [resumed, resumed2]) {
      const [board] = boardEvents(await stream.until((r) => (boardCount(r) >= 1 ? r : undefined)));
      expect(board?.id).not.toBe(current);
    }
  });

  it("refuses as the POST does, in its JSON envelope: 401, 400 naming the fields, 405", async () => {
    const cases: { path: string; headers: Record<string, string>; post?: unknown; status: number }[] = [
      { path: `${STREAM}?${QUERY}`, headers: {}, post: JANUARY, status: 401 },
      {
        path: `${STREAM}?startTimestamp=abc&endTimestamp=${JANUARY.endTimestamp}&numUsers=0`,
        headers: { authorization: `Bearer ${key}` },
        post: { startTimestamp: "abc", endTimestamp: JANUARY.endTimestamp, numUsers: 0 },
        status: 400,
      },
      {
        path: `${STREAM}?endTimestamp=99999999999999&numUsers=`,
        headers: { authorization: `Bearer ${key}` },
        post: { endTimestamp: 99999999999999, numUsers: "" },
        status: 400,
      },
    ];
    for (const c of cases) {
      const posted = await restTop(servers.publicUrl, c.headers.authorization === undefined ? null : key, c.post);
      expect(posted.status).toBe(c.status);
      for (const reply of [
        await h1(c.path, c.headers).until((r) => (r.ended ? r : undefined)),
        await h2(c.path, c.headers).until((r) => (r.ended ? r : undefined)),
      ]) {
        expect(reply.status).toBe(c.status);
        expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(reply.headers["cache-control"]).toBe("no-store");
        expect(reply.body).toBe(posted.text);
        expect(documented(reply)).toEqual([]);
      }
    }
    const wrongMethod = await fetch(`${servers.publicUrl}${STREAM}?${QUERY}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET");
    expect(await wrongMethod.json()).toEqual({
      data: null,
      errors: [{ code: "method_not_allowed", message: `use GET for ${STREAM}` }],
    });
  });

  it("disconnects a viewer that stops reading while another keeps receiving", async () => {
    const bigKey = (await createKey(servers.database.db, "aff-sse-big")).secret;
    await servers.client("grpc").upsertUsers({
      users: Array.from({ length: 100 }, (_, i) => ({
        id: `sse-big-${i}`,
        affiliateId: "aff-sse-big",
        username: `big ${i}`,
        avatar: `https://img.example/${i}/${"b".repeat(2_000)}`,
      })),
    });
    const path = `${STREAM}?startTimestamp=${JANUARY.startTimestamp}&endTimestamp=${JANUARY.endTimestamp}&numUsers=100`;
    const reader = h1(path, { authorization: `Bearer ${bigKey}` });
    const stalled = h1(path, { authorization: `Bearer ${bigKey}` }, false);
    await servers.client("grpc").recordWagers({
      wagers: Array.from({ length: 100 }, (_, i) => ({
        id: `sse-big-w${i}`,
        userId: `sse-big-${i}`,
        amount: `${100 + i}`,
        placedAt: BigInt(JAN_1_2025 + 5),
      })),
    });
    const slow = () => metricSample(servers.app.metrics, 'topwagers_stream_disconnects_total{reason="slow"}');
    // Each change below waits for the reader's next board: first the board with all 100 users.
    await reader.until((r) =>
      boardEvents(r).some((e) => (e.data as { data: unknown[] }).data.length === 100) ? true : undefined,
    );
    let changes = 0;
    for (; changes < 120 && (await slow()) === 0; changes++) {
      const seen = boardCount(reader.reply as RawReply);
      await record(`sse-big-${changes % 100}`, "1000");
      await reader.until((r) => (boardCount(r) > seen ? true : undefined));
    }
    expect(await slow()).toBe(1);
    // The server closed the stalled viewer's connection: reading again, it finds the end.
    stalled.socket.resume();
    await stalled.until((r) => (r.ended ? true : undefined));
    const seen = boardCount(reader.reply as RawReply);
    await record("sse-big-0", "99999");
    const last = await reader.until((r) => (boardCount(r) > seen ? boardEvents(r).at(-1) : undefined));
    expect((last?.data as { data: { username: string }[] } | undefined)?.data[0]?.username).toBe("big 0");
  });
});
