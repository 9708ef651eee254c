/**
 * `npm run demo` shows the product's best part: a newcomer's first command creates a monthly demo
 * race with prizes and an overlay key, prints the race overlay's URL and a curl line, and keeps
 * wagers arriving. Run as `demo` runs (the built CLI) against a throwaway database: the printed
 * curl's race is live with its prizes, the printed overlay URL is the page, and the race moves.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectionOptions } from "../../src/platform/database/database.js";
import { CLI_ENTRY } from "../support/cli.js";
import { TEST_SERVER_URL } from "../support/database.js";
import { freePort, sleep, stopChild } from "../support/processes.js";

const name = `tw_test_demo_race_${randomBytes(4).toString("hex")}`;
const url = new URL(TEST_SERVER_URL);
url.pathname = `/${name}`;
let demo: ChildProcess | undefined;
let stdout = "";
let stderr = "";
let port = 0;

interface Race {
  readonly title: string;
  readonly state: string;
  readonly prizes: string[];
  readonly repeat: string;
  readonly entries: { rank: number; prize: string }[];
  readonly version: string;
  readonly next: { startsAt: number } | null;
}

async function race(secret: string): Promise<Race> {
  const response = await fetch(`http://127.0.0.1:${port}/races/monthly`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Race }).data;
}

beforeAll(async () => {
  port = await freePort();
  demo = spawn(process.execPath, [CLI_ENTRY, "demo", "--port", String(port)], {
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      INTERNAL_PORT: String(await freePort()),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  demo.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  demo.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  for (let i = 0; i < 600 && !stdout.includes("so the board and the race move"); i++) await sleep(100);
  if (!stdout.includes("so the board and the race move"))
    throw new Error(`the demo did not start: ${stdout}\n${stderr}`);
}, 90_000);

afterAll(async () => {
  await stopChild(demo);
  const { database: _unused, ...server } = connectionOptions(url.toString());
  const admin = await mysql.createConnection(server);
  await admin.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(name)}`);
  await admin.end();
});

it("prints a live monthly race with prizes, its overlay URL, and keeps wagers arriving", async () => {
  const secret = /Bearer (tw_sk_[A-Za-z0-9]+)'/.exec(stdout)?.[1] ?? "";
  expect(secret).not.toBe("");
  expect(stdout).toContain(`curl -s http://localhost:${port}/races/monthly -H 'Authorization: Bearer ${secret}'`);
  const overlay = new RegExp(
    `(http://localhost:${port}/board\\?key=tw_pub_[A-Za-z0-9]+&race=monthly&theme=transparent)`,
  ).exec(stdout)?.[1];
  expect(overlay).toBeDefined();

  let first = await race(secret);
  expect([first.title, first.state, first.repeat]).toEqual(["$1,000 monthly race", "live", "monthly"]);
  expect(first.prizes).toEqual(["500.00", "250.00", "125.00", "75.00", "50.00"]);
  // The next month's race is made by the race clock's first tick, a moment after the server starts.
  for (let i = 0; i < 40 && first.next === null; i++) {
    await sleep(250);
    first = await race(secret);
  }
  expect(first.next).not.toBeNull();

  const page = await fetch((overlay ?? "").replace("localhost", "127.0.0.1"));
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toMatch(/^text\/html/);

  // A few wagers a second to the month's leaders: within seconds the race shows something new.
  let moved = first;
  for (let i = 0; i < 80 && moved.version === first.version; i++) {
    await sleep(250);
    moved = await race(secret);
  }
  expect(moved.version).not.toBe(first.version);
  expect(moved.entries.length).toBeGreaterThan(0);
  expect(moved.entries[0]).toEqual(expect.objectContaining({ rank: 1, prize: "500.00" }));
}, 60_000);
