/**
 * The REST contract (docs/contract.md, "The one public operation") on a real socket over a real database: the success envelope, its
 * ordering and exact decimal totals.
 * One of the test/integration/rest-contract-*.test.ts files; the calls, constants and data are in
 * test/support/rest-contract.ts.
 */
import { describe, expect, it } from "vitest";
import { NOV_1, OCT_1, OCT_16 } from "../support/dates.js";
import * as contract from "../support/rest-contract.js";

let clock = contract.NOW;
contract.useRestContractServer(() => clock);

// ---- success ---------------------------------------------------------------

/** A board of up to 10 users for the one second `at` (both bounds inclusive). */
const oneSecond = (at: number) => ({ startTimestamp: at, endTimestamp: at, numUsers: 10 });
describe("200: the envelope, ordering and totals", () => {
  it("answers 200 with data, errors null, exactly three fields per entry and the contract's headers", async () => {
    const reply = await contract.top(contract.keys.rank, { ...contract.OCTOBER, numUsers: 3 });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(
      '{"data":[' +
        `{"username":"big","avatar":"${contract.img("big")}","totalWagered":1000.5},` +
        `{"username":"whale","avatar":"${contract.img("whale")}","totalWagered":500},` +
        `{"username":"Zed","avatar":"${contract.img("zed")}","totalWagered":100}` +
        '],"errors":null}',
    );
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(reply.headers["cache-control"]).toBe("no-store");
    expect(reply.headers.vary).toBe("Accept-Encoding");
  });

  it("orders by total descending, ties by username in code-point order, then by user id", async () => {
    // Code-point order differs from a case-insensitive or locale collation ("Zed" < "alice",
    // "zebra" < "éclair", user id "rank-B" < "rank-a") and from JavaScript's default UTF-16
    // sort (U+E000 < U+1F600 although the surrogate pair of U+1F600 sorts first in UTF-16).
    // "small" has 99.99999999, which sorts above 100 as text.
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 100 })).toEqual(
      contract.OCTOBER_RANKING,
    );
    const usernames = contract.OCTOBER_RANKING.slice(2, 10).map((e) => e.username);
    expect([...usernames].sort()).not.toEqual(usernames); // the test would catch a UTF-16 sort
    expect([...usernames].sort((a, b) => a.localeCompare(b))).not.toEqual(usernames);
  });

  it("orders usernames that differ only by a trailing space or tab in code-point order", async () => {
    // Usernames and ids are stored as VARBINARY: byte (code point) order, no PAD SPACE, so
    // "pad" < "pad " and "a" < "a\t", as code point order requires.
    expect(await contract.entries(contract.keys.pad, { ...contract.OCTOBER, numUsers: 10 })).toEqual([
      { username: "a", avatar: contract.img("a"), totalWagered: 1 },
      { username: "a\t", avatar: contract.img("a-tab"), totalWagered: 1 },
      { username: "pad", avatar: contract.img("pad"), totalWagered: 1 },
      { username: "pad ", avatar: contract.img("pad-space"), totalWagered: 1 },
    ]);
  });

  it("returns the first numUsers contract.entries of that order", async () => {
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 1 })).toEqual(
      contract.OCTOBER_RANKING.slice(0, 1),
    );
    // The cut falls between the two users named "twin": the lower user id stays.
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 5 })).toEqual(
      contract.OCTOBER_RANKING.slice(0, 5),
    );
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 11 })).toEqual(
      contract.OCTOBER_RANKING,
    );
  });

  it("returns a shorter list when fewer users wagered, and data [] when nobody did", async () => {
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 12 })).toEqual(
      contract.OCTOBER_RANKING,
    );
    expect((await contract.top(contract.keys.empty, { ...contract.OCTOBER, numUsers: 10 })).text).toBe(
      '{"data":[],"errors":null}',
    );
    // aff-rank has no wagers in the first half of September.
    const september = { startTimestamp: OCT_1 - 30 * 86400, endTimestamp: OCT_1 - 15 * 86400, numUsers: 10 };
    const reply = await contract.top(contract.keys.rank, september);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"data":[],"errors":null}');
  });

  it("counts wagers at the first and the last second of the period (both bounds inclusive)", async () => {
    const whale = contract.OCTOBER_RANKING[1];
    expect(
      await contract.entries(contract.keys.rank, { startTimestamp: OCT_1, endTimestamp: OCT_1, numUsers: 10 }),
    ).toEqual([{ ...whale, totalWagered: 499 }]);
    expect(
      await contract.entries(contract.keys.rank, { startTimestamp: NOV_1 - 1, endTimestamp: NOV_1 - 1, numUsers: 10 }),
    ).toEqual([{ ...whale, totalWagered: 1 }]);
    // One second after the first, one before the last: neither of the whale's edge wagers.
    expect(
      await contract.entries(contract.keys.rank, { startTimestamp: OCT_1 + 1, endTimestamp: NOV_1 - 2, numUsers: 2 }),
    ).toEqual(
      contract.OCTOBER_RANKING.slice(0, 1).concat([
        { username: "Zed", avatar: contract.img("zed"), totalWagered: 100 },
      ]),
    );
  });

  it("treats endTimestamp == startTimestamp as a one-second period", async () => {
    expect(await contract.entries(contract.keys.rank, oneSecond(OCT_16 + 1))).toEqual([
      { username: "big", avatar: contract.img("big"), totalWagered: 0.5 },
    ]);
    expect(
      await contract.entries(contract.keys.rank, { startTimestamp: OCT_1 + 1, endTimestamp: OCT_1 + 1, numUsers: 10 }),
    ).toEqual([]);
  });

  it("allows an end in the future (a running period)", async () => {
    expect(
      await contract.entries(contract.keys.live, {
        startTimestamp: NOV_1,
        endTimestamp: contract.NOW + 30,
        numUsers: 10,
      }),
    ).toEqual([{ username: "live-now", avatar: contract.img("live-now"), totalWagered: 12.25 }]);
    // The largest end accepted (10^11 s, the year 5138): October plus the November wagers.
    const far = await contract.top(contract.keys.rank, {
      startTimestamp: OCT_1,
      endTimestamp: 100_000_000_000,
      numUsers: 3,
    });
    expect(far.status).toBe(200);
    expect(far.json).toEqual({
      data: [
        { username: "whale", avatar: contract.img("whale"), totalWagered: 10500 },
        { username: "small", avatar: contract.img("small"), totalWagered: 1099.99999999 },
        { username: "big", avatar: contract.img("big"), totalWagered: 1000.5 },
      ],
      errors: null,
    });
  });

  it("answers a start in the future with 200 and data [], even when a wager is already recorded there", async () => {
    const ahead = { startTimestamp: contract.NOW + 1, endTimestamp: contract.NOW + 3600, numUsers: 10 };
    const reply = await contract.top(contract.keys.live, ahead);
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('{"data":[],"errors":null}');
    // Once the clock has passed the start, the same question has an answer.
    clock = contract.NOW + 120;
    try {
      expect(await contract.entries(contract.keys.live, ahead)).toEqual([
        { username: "live-ahead", avatar: contract.img("live-ahead"), totalWagered: 3 },
      ]);
    } finally {
      clock = contract.NOW;
    }
  });

  it("sums 2,000 wagers with 8 fraction digits exactly, and writes every digit in the JSON number", async () => {
    const summer = contract.renderUnits(contract.MANY.totalUnits);
    // The data are chosen so that adding the amounts as floats gives another number.
    const floatSum = contract.MANY.amounts.reduce((sum, amount) => sum + Number(amount), 0);
    expect(String(floatSum)).not.toBe(summer);
    expect(summer).toMatch(/^\d+\.\d{8}$/);
    const reply = await contract.top(contract.keys.sum, { ...contract.OCTOBER, numUsers: 100 });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(
      '{"data":[' +
        `{"username":"huge","avatar":"${contract.img("huge")}","totalWagered":2999999999999.99999997},` +
        `{"username":"summer","avatar":"${contract.img("summer")}","totalWagered":${summer}},` +
        `{"username":"whole","avatar":"${contract.img("whole")}","totalWagered":13000},` +
        `{"username":"half","avatar":"${contract.img("half")}","totalWagered":3.50000001},` +
        `{"username":"tiny","avatar":"${contract.img("tiny")}","totalWagered":0.00000001}` +
        '],"errors":null}',
    );
  });

  it("shows a key only its own affiliate's wagers; a user who moved keeps old wagers with the old affiliate", async () => {
    expect(await contract.entries(contract.keys.affA, { ...contract.OCTOBER, numUsers: 10 })).toEqual([
      { username: "mover", avatar: contract.img("mover"), totalWagered: 30 },
      { username: "stays-a", avatar: contract.img("stays-a"), totalWagered: 1 },
    ]);
    expect(await contract.entries(contract.keys.affB, { ...contract.OCTOBER, numUsers: 10 })).toEqual([
      { username: "stays-b", avatar: contract.img("stays-b"), totalWagered: 50 },
      { username: "mover", avatar: contract.img("mover"), totalWagered: 4.5 },
    ]);
    // The same period through another affiliate's key shows none of these users.
    expect(
      await contract.entries(contract.keys.rank, {
        startTimestamp: OCT_1 + 100,
        endTimestamp: OCT_1 + 400,
        numUsers: 10,
      }),
    ).toEqual([]);
  });

  it("gives users without an avatar the configured DEFAULT_AVATAR_URL", async () => {
    expect(await contract.entries(contract.keys.rank, oneSecond(OCT_16 + 60))).toEqual([
      { username: "zebra", avatar: contract.DEFAULT_AVATAR, totalWagered: 0.5 },
    ]);
  });
});
