/**
 * Signed live races (issue 36 item 3) over real SSE sockets: a race stream's viewer that asks (`signed=true`)
 * gets each version of the race with a detached signature covering exactly that version's standings (verified
 * with jose against the live JWK Set the server publishes, `typ` live-race+jws, signed by the live key the server
 * made, never the results' key, whose JWK Set refuses it; the payload canonicalized by the `canonicalize` package);
 * 1,000 viewers of one race cost one signature per version (topwagers_race_signatures_total); a viewer that does
 * not ask gets the events it always got, byte for byte.
 */
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { addBoard, addWagers, createKey, wager } from "../support/fixtures.js";
import { metricSample, RawHttp1Stream } from "../support/live.js";
import { raceNamed } from "../support/races.js";
import { ISSUER, liveKid, type Signed, sealedSigningKey, useSigningStreams } from "../support/signed-races.js";

const { server, streams, verified } = useSigningStreams("signed_races", 2_000, "live-race+jws");
const AFFILIATE = "sr-aff";
const VIEWERS = Number(process.env.SR_VIEWERS ?? 1_000);

interface RaceEvent {
  readonly id: string | undefined;
  readonly text: string;
}

function open(key: string, query: string): RawHttp1Stream {
  const stream = new RawHttp1Stream(server.port, `/races/sr-weekly/stream${query}`, {
    authorization: `Bearer ${key}`,
  });
  streams.push(stream);
  return stream;
}

/** An event's body with the server's clock (`data.now`) left out: the rest is the version's. */
function withoutNow(text: string): unknown {
  const body = JSON.parse(text) as { data: Record<string, unknown> };
  const { now: _now, ...data } = body.data;
  return { ...body, data };
}

const raceEvents = (stream: RawHttp1Stream): RaceEvent[] =>
  (stream.reply?.events ?? []).filter((e) => e.event === "race").map((e) => ({ id: e.id, text: e.data ?? "" }));

const events = (stream: RawHttp1Stream, n: number): Promise<RaceEvent[]> =>
  stream.until(() => (raceEvents(stream).length >= n ? raceEvents(stream) : undefined), 30_000, `${n} race events`);

describe("signed live races", () => {
  it("signs each version once for 1,000 viewers, over exactly its standings; plain viewers get the plain events", async () => {
    const now = Math.floor(Date.now() / 1000);
    const start = now - 3_600;
    const end = now + 86_400;
    const made = await sealedSigningKey(server.database.db, now - 10, now - 9);
    const { secret } = await createKey(server.database.db, AFFILIATE);
    await addBoard(server.database.db, AFFILIATE, [
      ["sr-ann", "ann", "https://img.example/ann.png", ["1500.25", start + 10]],
      ["sr-bo", "bo", "", ["700", start + 20]],
    ]);
    const [rows] = await server.database.db.read.query<RowDataPacket[]>(
      "SELECT id FROM affiliates WHERE external_id = ?",
      [AFFILIATE],
    );
    const created = await server.app.races.create(
      Number(rows[0]?.id),
      raceNamed("sr-weekly", "Signed race", [start, end], { prizes: ["60.00", "40.00"], currency: "USD" }),
    );
    if (created.kind !== "ok") throw new Error(JSON.stringify(created));
    const raceId = created.value.race.id;

    const before = await metricSample(server.app.metrics, "topwagers_race_signatures_total");
    const plain = open(secret, "");
    const viewers = Array.from({ length: VIEWERS }, () => open(secret, "?signed=true"));
    const firsts = await Promise.all(viewers.map((stream) => events(stream, 1)));
    const first = firsts[0]?.[0] as RaceEvent;
    const parsed = JSON.parse(first.text) as { data: { version: string }; errors: null; signed: Signed };
    // Every viewer got this version with the same signature (a viewer who came after a poll sees a later `now`).
    const signedText = `,"signed":${JSON.stringify(parsed.signed)}}`;
    expect(firsts.every((received) => received[0]?.id === first.id && received[0]?.text.endsWith(signedText))).toBe(
      true,
    );
    // The signed event is the plain event with `signed` added after `errors`, and nothing else changed.
    const plainFirst = (await events(plain, 1))[0] as RaceEvent;
    expect(plainFirst.id).toBe(first.id);
    expect(Object.keys(JSON.parse(plainFirst.text) as object)).toEqual(["data", "errors"]);
    const unsignedPart = `${first.text.slice(0, -signedText.length)}}`;
    expect(withoutNow(unsignedPart)).toEqual(withoutNow(plainFirst.text));
    expect(first.text).toBe(`${unsignedPart.slice(0, -1)}${signedText}`);

    const signedAt = parsed.signed.payload.signedAt as number;
    expect(Math.abs(signedAt - Math.floor(Date.now() / 1000))).toBeLessThanOrEqual(60);
    const expectedPayload = {
      type: "topwagers.live-race.v1",
      affiliate: AFFILIATE,
      raceId,
      slug: "sr-weekly",
      state: "live",
      period: { start, end },
      rankBy: "wagered",
      currency: "USD",
      version: first.id,
      entries: [
        {
          rank: 1,
          username: "ann",
          avatar: "https://img.example/ann.png",
          totalWagered: "1500.25",
          weightedWagered: "1500.25",
          prize: "60.00",
        },
        {
          rank: 2,
          username: "bo",
          avatar: server.config.defaultAvatarUrl,
          totalWagered: "700",
          weightedWagered: "700",
          prize: "40.00",
        },
      ],
      unallocated: "0.00",
      signedAt,
      iss: ISSUER,
    };
    // Signed with the live key the server made for the fleet, never the results' key.
    expect(parsed.signed.kid).toBe(await liveKid(server.database.db));
    expect(parsed.signed.kid).not.toBe(made.kid);
    expect(parsed.signed.payload).toEqual(expectedPayload);
    expect(await verified(parsed.signed)).toEqual(expectedPayload);
    // Other standings, or another race, do not verify with that signature.
    const swapped = [expectedPayload.entries[1], expectedPayload.entries[0]];
    await expect(verified({ ...parsed.signed, payload: { ...expectedPayload, entries: swapped } })).rejects.toThrow(
      /signature verification failed/,
    );
    await expect(verified({ ...parsed.signed, payload: { ...expectedPayload, raceId: "race_other" } })).rejects.toThrow(
      /signature verification failed/,
    );
    expect(await metricSample(server.app.metrics, "topwagers_race_signatures_total")).toBe(before + 1);

    // The next version: signed once more, however many watch it.
    await addWagers(server.database.db, [wager("sr-bo", "1000", start + 30)]);
    const seconds = await Promise.all(viewers.map((stream) => events(stream, 2)));
    const second = seconds[0]?.[1] as RaceEvent;
    expect(second.id).not.toBe(first.id);
    expect(seconds.every((received) => received[1]?.id === second.id)).toBe(true);
    const secondSigned = (JSON.parse(second.text) as { signed: Signed }).signed;
    const secondSignedText = `,"signed":${JSON.stringify(secondSigned)}}`;
    expect(seconds.every((received) => received[1]?.text.endsWith(secondSignedText))).toBe(true);
    const secondPayload = (await verified(secondSigned)) as { version: string; entries: unknown[] };
    expect(secondPayload.version).toBe(second.id);
    expect(secondPayload.entries).toEqual([
      { ...expectedPayload.entries[1], rank: 1, totalWagered: "1700", weightedWagered: "1700", prize: "60.00" },
      { ...expectedPayload.entries[0], rank: 2, prize: "40.00" },
    ]);
    expect(await metricSample(server.app.metrics, "topwagers_race_signatures_total")).toBe(before + 2);
    const plainSecond = (await events(plain, 2))[1] as RaceEvent;
    expect(plainSecond.id).toBe(second.id);
    expect(Object.keys(JSON.parse(plainSecond.text) as object)).toEqual(["data", "errors"]);
    // Nothing else was signed for the plain viewer, nor for the boards.
    expect(await metricSample(server.app.metrics, "topwagers_board_signatures_total")).toBe(0);
  }, 120_000);
});
