/**
 * examples/typescript/client.ts against a running server, over Connect
 * (HTTP/1.1) and gRPC (HTTP/2): the same answer both ways, refusals as
 * ConnectError codes, and the half-month arithmetic at month and year ends.
 */
import { execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { currentHalfMonth, topWagers, topWagersClient } from "../../examples/typescript/client.js";
import { collectOutput, watchOneChange } from "../support/cli.js";
import { DEC_1, NOV_16 } from "../support/dates.js";
import { addBoard, addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SECOND_HALF_OF_NOVEMBER = { startTimestamp: BigInt(NOV_16), endTimestamp: BigInt(DEC_1 - 1) };

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer("typescript_client", { DEFAULT_AVATAR_URL: "https://cdn.example.test/default.png" });
  const db = server.database.db;
  key = (await createKey(db, "aff-ts")).secret;
  await addBoard(db, "aff-ts", [
    ["ts-1", "whale", "https://img.example.test/w.png", ["15000.25", NOV_16], ["0.25", DEC_1 - 1]],
    ["ts-2", "minnow", "", ["0.1", NOV_16 + 1], ["0.2", NOV_16 + 2], ["5", DEC_1]],
  ]);
});

afterAll(async () => {
  await server?.close();
});

describe("the connect-es client example", () => {
  it.each([["connect"], ["grpc"]] as const)("returns the ranked entries over %s", async (protocol) => {
    const entries = await topWagers(topWagersClient(server.baseUrl, key, protocol), SECOND_HALF_OF_NOVEMBER, 10);
    expect(
      entries.map((e) => ({
        rank: e.rank,
        username: e.username,
        avatar: e.avatar,
        totalWagered: e.totalWagered,
        totalWageredDecimal: e.totalWageredDecimal,
        userId: e.userId,
      })),
    ).toEqual([
      {
        rank: 1,
        username: "whale",
        avatar: "https://img.example.test/w.png",
        totalWagered: 15000.5,
        totalWageredDecimal: "15000.5",
        userId: "ts-1",
      },
      {
        rank: 2,
        username: "minnow",
        avatar: "https://cdn.example.test/default.png",
        totalWagered: 0.3,
        totalWageredDecimal: "0.3",
        userId: "ts-2",
      },
    ]);
  });

  it.each([["connect"], ["grpc"]] as const)("surfaces refusals as ConnectError codes over %s", async (protocol) => {
    const invalid = topWagers(topWagersClient(server.baseUrl, key, protocol), SECOND_HALF_OF_NOVEMBER, 101);
    await expect(invalid).rejects.toThrow(ConnectError);
    await expect(invalid).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: "numUsers must be between 1 and 100",
    });
    const stranger = topWagers(
      topWagersClient(server.baseUrl, `tw_${"A".repeat(32)}`, protocol),
      SECOND_HALF_OF_NOVEMBER,
      1,
    );
    await expect(stranger).rejects.toMatchObject({ code: Code.Unauthenticated });
  });

  it("computes half-months with inclusive ends, across month and year ends", () => {
    const at = (iso: string) => Date.parse(iso) / 1000;
    const period = (iso: string) => {
      const p = currentHalfMonth(at(iso));
      return [p.startTimestamp, p.endTimestamp].map((s) => new Date(Number(s) * 1000).toISOString());
    };
    expect(period("2026-11-22T07:00:00Z")).toEqual(["2026-11-16T00:00:00.000Z", "2026-11-30T23:59:59.000Z"]);
    expect(period("2026-11-15T23:59:59Z")).toEqual(["2026-11-01T00:00:00.000Z", "2026-11-15T23:59:59.000Z"]);
    expect(period("2026-12-31T12:00:00Z")).toEqual(["2026-12-16T00:00:00.000Z", "2026-12-31T23:59:59.000Z"]);
    expect(period("2028-02-20T00:00:00Z")).toEqual(["2028-02-16T00:00:00.000Z", "2028-02-29T23:59:59.000Z"]);
    expect(currentHalfMonth(NOV_16 + 100)).toEqual(SECOND_HALF_OF_NOVEMBER);
  });

  it("runs as a program from the build, as its header says, on the current half-month", async () => {
    // A wager at the first second of this half-month and one at the last second of the previous
    // one, for an affiliate of its own; the program must show only the first.
    const db = server.database.db;
    const todayKey = (await createKey(db, "aff-ts-now")).secret;
    await addUsers(db, [{ id: "ts-now", affiliateId: "aff-ts-now", username: "today", avatar: "" }]);
    const now = new Date();
    const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() <= 15 ? 1 : 16) / 1000;
    await addWagers(db, [wager("ts-now", "7.5", start), wager("ts-now", "1000", start - 1)]);
    const built = fileURLToPath(new URL("../../dist/examples/typescript/client.js", import.meta.url));
    for (const protocol of ["connect", "grpc"]) {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [built, server.baseUrl, protocol], {
        env: { ...process.env, TOPWAGERS_KEY: todayKey },
        timeout: 20_000,
      });
      expect(stderr).toBe("");
      expect(stdout).toBe(`  1  today${" ".repeat(19)} 7.5\n`);
    }
  });

  it.each([["connect"], ["grpc"]] as const)(
    "watches with `for await` over %s: prints the board, again after a wager, and stops on SIGINT",
    async (protocol) => {
      const db = server.database.db;
      const watchKey = (await createKey(db, `aff-ts-watch-${protocol}`)).secret;
      await addUsers(db, [
        { id: `ts-w-${protocol}`, affiliateId: `aff-ts-watch-${protocol}`, username: "watched", avatar: "" },
      ]);
      // The first second of the current half-month: in the program's period, and never in the future.
      const start = Number(currentHalfMonth(Math.floor(Date.now() / 1000)).startTimestamp);
      await addWagers(db, [wager(`ts-w-${protocol}`, "1.5", start)]);
      const built = fileURLToPath(new URL("../../dist/examples/typescript/client.js", import.meta.url));
      const child = spawn(process.execPath, [built, server.baseUrl, protocol, "watch"], {
        env: { ...process.env, TOPWAGERS_KEY: watchKey },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const output = collectOutput(child);
      const code = await watchOneChange(child, output, { pattern: /^ {2}1 {2}watched/gm, checks: 200 }, () =>
        addWagers(db, [wager(`ts-w-${protocol}`, "2", start)]),
      );
      expect(output.stderr).toBe("");
      expect(code).toBe(0);
      const board = /^board [A-Za-z0-9_-]{22} as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/;
      const lines = output.stdout.trimEnd().split("\n");
      expect(lines.length).toBe(4);
      expect(lines[0]).toMatch(board);
      expect(lines[1]).toBe(`  1  watched${" ".repeat(17)} 1.5`);
      expect(lines[2]).toMatch(board);
      expect(lines[2]).not.toBe(lines[0]);
      expect(lines[3]).toBe(`  1  watched${" ".repeat(17)} 3.5`);
    },
  );
});
