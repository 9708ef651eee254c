/**
 * Every rule of docs/contract.md "Ingest" refuses with its own message, names the item by
 * index and id, reports every problem of a call at once, and writes nothing:
 * not the valid wagers sent alongside, not a rollup row.
 */
import { readFileSync } from "node:fs";
import { Code } from "@connectrpc/connect";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { refusal } from "../support/calls.js";
import { type IngestServers, startIngestServers, TEST_INGEST_TOKEN } from "../support/ingest.js";

const NOW = 1_792_108_800; // 2026-10-16T00:00:00Z, the servers' clock
const RESERVED = /[:;,/?@&=+$#]/;

let servers: IngestServers;

async function counts(): Promise<number[]> {
  const result: number[] = [];
  for (const table of [
    "users",
    "affiliates",
    "wagers",
    "wager_hourly",
    "wager_daily",
    "wager_halfmonthly",
    "wager_monthly",
  ]) {
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${table}`);
    result.push(Number(rows[0]?.n));
  }
  return result;
}

const valid = { id: "ok-1", userId: "u-1", amount: "1.5", placedAt: BigInt(NOW - 60) };

/** Sends the call; expects INVALID_ARGUMENT with exactly this message and nothing written. */
async function expectInvalid(send: () => Promise<unknown>, message: string): Promise<void> {
  const before = await counts();
  const error = await refusal(send());
  expect(error.code).toBe(Code.InvalidArgument);
  expect(error.rawMessage).toBe(message);
  expect(await counts()).toEqual(before);
}

/** Sends a valid wager and a bad one: refused as a whole (see expectInvalid). */
function expectRefused(bad: Partial<typeof valid>, message: string): Promise<void> {
  const wagers = [valid, { ...valid, id: "bad-1", ...bad }];
  return expectInvalid(() => servers.client("grpc").recordWagers({ wagers }), message);
}

beforeAll(async () => {
  servers = await startIngestServers("ingest_validation", { INGEST_TOKEN: TEST_INGEST_TOKEN }, { now: () => NOW });
  await servers
    .client("grpc")
    .upsertUsers({ users: [{ id: "u-1", affiliateId: "aff-1", username: "alice", avatar: "" }] });
});

afterAll(async () => {
  await servers?.close();
});

describe("RecordWagers amounts", () => {
  it.each([
    ["", "amount is required"],
    ["0", "amount must be greater than 0"],
    ["0.00000000", "amount must be greater than 0"],
    ["-1", "amount must be a positive decimal without a sign"],
    ["+1", "amount must be a positive decimal without a sign"],
    ["1e3", "amount must not use exponent notation (write 1500 not 1.5e3)"],
    ["1.5E-3", "amount must not use exponent notation (write 1500 not 1.5e3)"],
    [" 1", "amount must not contain spaces"],
    ["1 ", "amount must not contain spaces"],
    ["1,000", "amount must not contain thousands separators"],
    ["1_000", "amount must not contain thousands separators"],
    ["1.123456789", "amount must have at most 8 fraction digits"],
    ["1000000000000", "amount must be below 10^12"],
    ["1000000000000.00000001", "amount must be below 10^12"],
    ["012", "amount must not have leading zeros"],
    [".5", "amount must be a decimal number like 12.5 (digits and an optional point)"],
    ["5.", "amount must be a decimal number like 12.5 (digits and an optional point)"],
    ["NaN", "amount must be a decimal number like 12.5 (digits and an optional point)"],
    ["Infinity", "amount must be a decimal number like 12.5 (digits and an optional point)"],
    ["１", "amount must be a decimal number like 12.5 (digits and an optional point)"],
    ["0x10", "amount must be a decimal number like 12.5 (digits and an optional point)"],
  ])("refuses %j", async (amount, problem) => {
    await expectRefused({ amount }, `wagers[1] (id "bad-1") ${problem}`);
  });

  it("accepts the smallest and the largest amounts", async () => {
    const wagers = [
      { ...valid, id: "min", amount: "0.00000001" },
      { ...valid, id: "max", amount: "999999999999.99999999" },
      { ...valid, id: "zero-point", amount: "0.5" },
      { ...valid, id: "whole", amount: "7" },
    ];
    expect(await servers.client("grpc").recordWagers({ wagers })).toMatchObject({ recorded: 4, duplicates: 0 });
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
      "SELECT external_id, amount FROM wagers WHERE external_id IN ('min', 'max', 'zero-point', 'whole') ORDER BY id",
    );
    expect(rows.map((r) => [r.external_id, r.amount])).toEqual([
      ["max", "999999999999.99999999"],
      ["min", "0.00000001"],
      ["whole", "7.00000000"],
      ["zero-point", "0.50000000"],
    ]);
  });
});

describe("RecordWagers ids, users and times", () => {
  it.each([
    ["an empty id", { id: "" }, 'wagers[1] (id "") id is required'],
    [
      "a 65-character id",
      { id: "w".repeat(65) },
      `wagers[1] (id "${"w".repeat(65)}") id must be at most 64 characters`,
    ],
    ["an empty userId", { userId: "" }, 'wagers[1] (id "bad-1") userId is required'],
    [
      "a 65-character userId",
      { userId: "u".repeat(65) },
      'wagers[1] (id "bad-1") userId must be at most 64 characters',
    ],
    ["a negative placedAt", { placedAt: -1n }, 'wagers[1] (id "bad-1") placedAt must be Unix seconds (0 or more)'],
    [
      "placedAt 301 s ahead",
      { placedAt: BigInt(NOW + 301) },
      'wagers[1] (id "bad-1") placedAt is more than 5 minutes in the future',
    ],
    [
      "placedAt in milliseconds",
      { placedAt: BigInt(NOW) * 1000n },
      'wagers[1] (id "bad-1") placedAt looks like milliseconds. Send Unix seconds',
    ],
    // Issue 20: before the earliest period start no leaderboard could ever show the wager.
    [
      "placedAt 1000 (1970)",
      { placedAt: 1000n },
      'wagers[1] (id "bad-1") placedAt must be 1733115600 (2 December 2024) or later since no period starts earlier',
    ],
    [
      "placedAt one second before 1733115600",
      { placedAt: 1_733_115_599n },
      'wagers[1] (id "bad-1") placedAt must be 1733115600 (2 December 2024) or later since no period starts earlier',
    ],
  ])("refuses %s", async (_label, bad, message) => {
    await expectRefused(bad, message);
  });

  it("counts ids in code points: 64 emoji are a valid id, and placedAt may be 5 minutes ahead", async () => {
    const emoji = "🎲".repeat(64);
    const result = await servers.client("grpc").recordWagers({
      wagers: [
        { ...valid, id: emoji, placedAt: BigInt(NOW + 300) },
        // Issue 20 moved the lower bound from 0 (this wager was placedAt 0n) to the earliest period start.
        { ...valid, id: "earliest", placedAt: 1_733_115_600n },
      ],
    });
    expect(result).toMatchObject({ recorded: 2, duplicates: 0 });
    await expectRefused(
      { id: "🎲".repeat(65) },
      `wagers[1] (id "${"🎲".repeat(65)}") id must be at most 64 characters`,
    );
  });

  it("refuses an id that is not valid Unicode (a lone surrogate sent in JSON) when decoding", async () => {
    const before = await counts();
    const response = await fetch(`${servers.internalUrl}/topwagers.v1.WagerIngestService/RecordWagers`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TEST_INGEST_TOKEN}` },
      body: `{"wagers":[{"id":"x\\ud800","userId":"u-1","amount":"1","placedAt":"${NOW}"}]}`,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      code: "invalid_argument",
      message: "cannot decode field topwagers.v1.IngestWager.id from JSON: expected string: invalid UTF8",
    });
    expect(await counts()).toEqual(before);
  });

  it("the field violation names the index, and the README's example refusal is the service's own words", async () => {
    const error = await refusal(
      servers
        .client("connect")
        .recordWagers({ wagers: [valid, valid, valid, { ...valid, id: "w9", placedAt: 1000n }] }),
    );
    const message =
      'wagers[3] (id "w9") placedAt must be 1733115600 (2 December 2024) or later since no period starts earlier';
    expect([error.code, error.rawMessage]).toEqual([Code.InvalidArgument, message]);
    expect(error.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["wagers[3]", message],
    ]);
    const readme = readFileSync("README.md", "utf8").replace(/\n\s*/g, " ");
    expect(readme).toContain(`\`invalid_argument\`, e.g. \`${message}\``);
  });

  it("refuses a call naming unknown users, listing each once, and writes nothing", async () => {
    const before = await counts();
    const error = await refusal(
      servers.client("connect").recordWagers({
        wagers: [
          valid,
          { ...valid, id: "n-1", userId: "ghost-1" },
          { ...valid, id: "n-2", userId: "ghost-2" },
          { ...valid, id: "n-3", userId: "ghost-1" },
        ],
      }),
    );
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toBe(
      'unknown users "ghost-1" "ghost-2". Send them with UpsertUsers before their wagers. Nothing was written',
    );
    expect(await counts()).toEqual(before);
  });

  it("reports every problem of a call, each with its index and id", async () => {
    const before = await counts();
    const error = await refusal(
      servers.client("grpc-web").recordWagers({
        wagers: [
          { ...valid, id: "p-0", amount: "-2" },
          valid,
          { ...valid, id: "p-2", amount: "1.000000001", placedAt: -5n },
          { ...valid, id: "", userId: "" },
        ],
      }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe(
      [
        'wagers[0] (id "p-0") amount must be a positive decimal without a sign',
        'wagers[2] (id "p-2") amount must have at most 8 fraction digits',
        'wagers[2] (id "p-2") placedAt must be Unix seconds (0 or more)',
        'wagers[3] (id "") id is required',
        'wagers[3] (id "") userId is required',
      ].join(". "),
    );
    expect(error.rawMessage).not.toMatch(RESERVED);
    expect(await counts()).toEqual(before);
  });

  it("refuses more than 1000 wagers in one call and accepts exactly 1000 and none", async () => {
    const many = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ ...valid, id: `${tag}-${i}` }));
    const before = await counts();
    const error = await refusal(servers.client("grpc").recordWagers({ wagers: many(1001, "big") }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("at most 1000 wagers per call (got 1001)");
    expect(await counts()).toEqual(before);
    expect(await servers.client("grpc").recordWagers({ wagers: [] })).toMatchObject({ recorded: 0, duplicates: 0 });
    expect(await servers.client("grpc").recordWagers({ wagers: many(1000, "full") })).toMatchObject({
      recorded: 1000,
      duplicates: 0,
    });
  });

  it("lists at most 50 problems in the message and counts the rest", async () => {
    const wagers = Array.from({ length: 60 }, (_, i) => ({ ...valid, id: `z-${i}`, amount: "0" }));
    const error = await refusal(servers.client("grpc").recordWagers({ wagers }));
    const parts = error.rawMessage.split(". ");
    expect(parts).toHaveLength(51);
    expect(parts[0]).toBe('wagers[0] (id "z-0") amount must be greater than 0');
    expect(parts[49]).toBe('wagers[49] (id "z-49") amount must be greater than 0');
    expect(parts[50]).toBe("and 10 more problems");
  });
});

describe("UpsertUsers", () => {
  const user = { id: "v-1", affiliateId: "aff-2", username: "victor", avatar: "https://img.example.com/v.png" };

  function expectUserRefused(bad: Partial<typeof user>, message: string): Promise<void> {
    const users = [user, { ...user, id: "bad-u", ...bad }];
    return expectInvalid(() => servers.client("grpc").upsertUsers({ users }), message);
  }

  const notUrl = 'users[1] (id "bad-u") avatar must be empty or an absolute http or https URL';
  it.each([
    ["an empty id", { id: "" }, 'users[1] (id "") id is required'],
    ["a 65-character id", { id: "x".repeat(65) }, `users[1] (id "${"x".repeat(65)}") id must be at most 64 characters`],
    ["an empty affiliateId", { affiliateId: "" }, 'users[1] (id "bad-u") affiliateId is required'],
    [
      "a 65-character affiliateId",
      { affiliateId: "a".repeat(65) },
      'users[1] (id "bad-u") affiliateId must be at most 64 characters',
    ],
    ["an empty username", { username: "" }, 'users[1] (id "bad-u") username is required'],
    [
      "a 65-character username",
      { username: "n".repeat(65) },
      'users[1] (id "bad-u") username must be at most 64 characters',
    ],
    ["a blank username", { username: "   " }, 'users[1] (id "bad-u") username must not be blank'],
    [
      "a username with a newline",
      { username: "two\nlines" },
      'users[1] (id "bad-u") username must not contain control characters',
    ],
    ["an ftp avatar", { avatar: "ftp://img.example.com/v.png" }, notUrl],
    ["a relative avatar", { avatar: "/v.png" }, notUrl],
    ["an avatar without a host", { avatar: "https://" }, notUrl],
    ["an avatar with a space", { avatar: "https://img.example.com/a b.png" }, notUrl],
    [
      "a 2049-character avatar",
      { avatar: `https://img.example.com/${"a".repeat(2049 - 24)}` },
      'users[1] (id "bad-u") avatar must be at most 2048 characters',
    ],
  ])("refuses %s", async (_label, bad, message) => {
    await expectUserRefused(bad, message);
  });

  it("accepts 64-character names, a 2048-character avatar and no avatar; the last profile of an id wins", async () => {
    const avatar = `https://img.example.com/${"a".repeat(2048 - 24)}`;
    expect(avatar).toHaveLength(2048);
    const result = await servers.client("grpc").upsertUsers({
      users: [
        { ...user, username: "é".repeat(64), avatar },
        { ...user, id: "v-2", avatar: "" },
        { ...user, username: "victor the second", avatar: "" },
      ],
    });
    expect(result.upserted).toBe(2);
    const [rows] = await servers.database.db.read.query<RowDataPacket[]>(
      `SELECT u.external_id, a.external_id AS affiliate, u.username, u.avatar_url
         FROM users u JOIN affiliates a ON a.id = u.affiliate_id WHERE u.external_id IN ('v-1', 'v-2') ORDER BY u.external_id`,
    );
    expect(rows).toEqual([
      { external_id: "v-1", affiliate: "aff-2", username: "victor the second", avatar_url: null },
      { external_id: "v-2", affiliate: "aff-2", username: "victor", avatar_url: null },
    ]);
  });

  it("refuses more than 1000 users in one call", async () => {
    const before = await counts();
    const users = Array.from({ length: 1001 }, (_, i) => ({ ...user, id: `many-${i}` }));
    const error = await refusal(servers.client("grpc").upsertUsers({ users }));
    expect(error.rawMessage).toBe("at most 1000 users per call (got 1001)");
    expect(await counts()).toEqual(before);
  });
});
