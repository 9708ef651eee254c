/**
 * Signed live boards (issue 36 item 3) over real SSE sockets: a viewer that asks (`signed=true`) gets each
 * board version with a detached signature covering exactly that version's entries (verified with jose against
 * the live JWK Set the server publishes, `typ` live-board+jws, signed by the live key the server made, never the
 * results' key, whose JWK Set refuses it; the payload canonicalized by the `canonicalize` package); 1,000 viewers of one
 * board cost one signature per version (topwagers_board_signatures_total); a viewer that does not ask gets the
 * plain envelope it always got.
 */
import { describe, expect, it } from "vitest";
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { addBoard, addWagers, createKey, wager } from "../support/fixtures.js";
import { boardEvents, metricSample, RawHttp1Stream, type RawReply } from "../support/live.js";
import { restCall } from "../support/rest.js";
import { ISSUER, liveKid, type Signed, sealedSigningKey, useSigningStreams } from "../support/signed-races.js";

const { server, streams, verified } = useSigningStreams("signed_boards", 2_000, "live-board+jws");
const AFFILIATE = "sb-aff";
const START = 1_793_491_200;
const END = 1_796_083_199;
const VIEWERS = Number(process.env.SB_VIEWERS ?? 1_000);

function open(key: string, signed: boolean): RawHttp1Stream {
  const query = `startTimestamp=${START}&endTimestamp=${END}&numUsers=3${signed ? "&signed=true" : ""}`;
  const stream = new RawHttp1Stream(server.port, `/top-affiliate-wagers-by-period/stream?${query}`, {
    authorization: `Bearer ${key}`,
  });
  streams.push(stream);
  return stream;
}

const boards = (stream: RawHttp1Stream, n: number): Promise<{ id: string; data: unknown }[]> =>
  stream.until((reply: RawReply) => (boardEvents(reply).length >= n ? boardEvents(reply) : undefined), 30_000);

describe("signed live boards", () => {
  it("signs each version once for 1,000 viewers, over exactly its entries; plain viewers get the plain envelope", async () => {
    const made: ActiveSigningKey = await sealedSigningKey(server.database.db, 1_764_000_000, 1_764_000_001);
    const { secret } = await createKey(server.database.db, AFFILIATE);
    await addBoard(server.database.db, AFFILIATE, [
      ["sb-ann", "ann", "https://img.example/ann.png", ["1500.25", START + 10]],
      ["sb-bo", "bo", "", ["700", START + 20]],
    ]);
    const before = await metricSample(server.app.metrics, "topwagers_board_signatures_total");
    const viewers = Array.from({ length: VIEWERS }, () => open(secret, true));
    const plain = open(secret, false);
    const firsts = await Promise.all(viewers.map((stream) => boards(stream, 1)));
    const first = firsts[0]?.[0] as { id: string; data: { data: unknown[]; errors: null; signed: Signed } };
    expect(firsts.every((events) => JSON.stringify(events[0]) === JSON.stringify(first))).toBe(true);
    const entries = [
      { username: "ann", avatar: "https://img.example/ann.png", totalWagered: 1500.25 },
      { username: "bo", avatar: `${server.config.defaultAvatarUrl}`, totalWagered: 700 },
    ];
    expect(first.data.data).toEqual(entries);
    expect(first.data.errors).toBeNull();
    const signedAt = first.data.signed.payload.signedAt as number;
    expect(Math.abs(signedAt - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(60);
    const expectedPayload = {
      type: "topwagers.live-board.v1",
      affiliate: AFFILIATE,
      period: { start: START, end: END },
      rankBy: "wagered",
      version: first.id,
      entries: [
        { rank: 1, ...entries[0], totalWagered: "1500.25", weightedWagered: "1500.25" },
        { rank: 2, ...entries[1], totalWagered: "700", weightedWagered: "700" },
      ],
      signedAt,
      iss: ISSUER,
    };
    // Signed with the live key the server made for the fleet, never the results' key.
    expect(first.data.signed.kid).toBe(await liveKid(server.database.db));
    expect(first.data.signed.kid).not.toBe(made.kid);
    expect(await verified(first.data.signed)).toEqual(expectedPayload);
    // Any other entries do not verify with that signature.
    const tampered = {
      ...first.data.signed,
      payload: { ...expectedPayload, entries: expectedPayload.entries.slice(1) },
    };
    await expect(verified(tampered)).rejects.toThrow(/signature verification failed/);
    const plainFirst = (await boards(plain, 1))[0];
    expect(plainFirst).toEqual({ id: first.id, data: { data: entries, errors: null } });
    expect(await metricSample(server.app.metrics, "topwagers_board_signatures_total")).toBe(before + 1);

    // The next version: signed once more, whoever watches.
    await addWagers(server.database.db, [wager("sb-bo", "1000", START + 30)]);
    const seconds = await Promise.all(viewers.map((stream) => boards(stream, 2)));
    const second = seconds[0]?.[1] as { id: string; data: { signed: Signed } };
    expect(second.id).not.toBe(first.id);
    expect(seconds.every((events) => JSON.stringify(events[1]) === JSON.stringify(second))).toBe(true);
    expect(
      ((await verified(second.data.signed)) as { entries: { username: string }[] }).entries.map((e) => e.username),
    ).toEqual(["bo", "ann"]);
    expect(await metricSample(server.app.metrics, "topwagers_board_signatures_total")).toBe(before + 2);

    // REST: 200 callers asking for the same board with "signed": true cost one signature.
    const request = { startTimestamp: START, endTimestamp: END - 1, numUsers: 3 };
    const post = (body: unknown) => restCall(`${server.baseUrl}/top-affiliate-wagers-by-period`, { key: secret, body });
    const answers = await Promise.all(Array.from({ length: 200 }, () => post({ ...request, signed: true })));
    expect(answers.every((answer) => answer.status === 200 && answer.text === answers[0]?.text)).toBe(true);
    const restEntries = [
      { username: "bo", avatar: server.config.defaultAvatarUrl, totalWagered: 1700 },
      { username: "ann", avatar: "https://img.example/ann.png", totalWagered: 1500.25 },
    ];
    const signedAnswer = answers[0]?.json as { data: unknown; errors: null; signed: Signed };
    expect(signedAnswer.data).toEqual(restEntries);
    expect(await verified(signedAnswer.signed)).toMatchObject({
      period: { start: START, end: END - 1 },
      entries: [
        { rank: 1, username: "bo", totalWagered: "1700", weightedWagered: "1700" },
        { rank: 2, username: "ann", totalWagered: "1500.25", weightedWagered: "1500.25" },
      ],
    });
    expect(await metricSample(server.app.metrics, "topwagers_board_signatures_total")).toBe(before + 3);
    // Not asked: the envelope as it always was.
    const plainAnswer = await post(request);
    expect(plainAnswer.text).toBe(JSON.stringify({ data: restEntries, errors: null }));
    expect((await post({ ...request, signed: "yes" })).status).toBe(400);
  }, 120_000);
});
