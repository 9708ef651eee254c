/**
 * `npm run demo` shows the product's best part: a newcomer's first command creates a monthly demo
 * race with prizes and an overlay key, prints the race overlay's URL and a curl line, and keeps
 * wagers arriving. Run as `demo` runs (the built CLI) against a throwaway database: the printed
 * curl's race is live with its prizes, the printed overlay URL is the page, and the race moves.
 * It also leaves last month's race finished, signed (with the key the server made at its first
 * start: servers sign by default) and in the results log, and prints its verify link, which opens
 * green in Chromium at once (issue 46 part 4).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import mysql from "mysql2/promise";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectionOptions } from "../../src/platform/database/database.js";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_ENV } from "../support/browser.js";
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

it("leaves last month's race finished, signed and logged, and prints its verify link, which opens green", async () => {
  const link = new RegExp(`\\n {2}(http://localhost:${port}/verify/(race_[a-z2-7]{20}))\\n`).exec(stdout);
  expect(stdout).toContain(
    "Last month's race is over: its result is signed and in the results log. Check it in a browser (a green check):",
  );
  const [, verifyUrl = "", raceId = ""] = link ?? [];
  expect(raceId).not.toBe("");
  // Signed by the one result key, which the server made and activated at its first start (the demo made none).
  const signed = (await (await fetch(`http://127.0.0.1:${port}/verify/${raceId}/signed`)).json()) as {
    jws: string;
    kid: string;
    log: { index: number; checkpoint: string | null };
  };
  const { database: _unused, ...server } = connectionOptions(url.toString());
  const admin = await mysql.createConnection({ ...server, database: name });
  const [keys] = await admin.query<mysql.RowDataPacket[]>("SELECT kid, active FROM signing_keys");
  await admin.end();
  expect(keys.map((k) => [k.kid, Number(k.active)])).toEqual([[signed.kid, 1]]);
  expect(signed.log.checkpoint).not.toBeNull();
  const checkpoint = (signed.log.checkpoint ?? "").split("\n");
  // Last month (UTC), from its first second to its last, with the demo's five prizes.
  const payload = JSON.parse(Buffer.from(signed.jws.split(".")[1] ?? "", "base64url").toString("utf8"));
  const now = new Date();
  const [from, to] = [
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1),
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
  ];
  expect([payload.raceId, payload.state, payload.period, payload.prizes]).toEqual([
    raceId,
    "final",
    { startsAt: from / 1000, endsAt: to / 1000 - 1 },
    ["500.00", "250.00", "125.00", "75.00", "50.00"],
  ]);
  if (!existsSync(CHROMIUM)) return;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, env: CHROMIUM_ENV });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(verifyUrl.replace("localhost", "127.0.0.1"));
    const status = page.locator("#status:not([data-state=checking])");
    await status.waitFor({ timeout: 15_000 });
    mkdirSync("test-artifacts", { recursive: true });
    await page.screenshot({ path: "test-artifacts/demo-verify-1280x900.png" });
    expect([await status.getAttribute("data-state"), await status.textContent()]).toEqual([
      "valid",
      `Valid: result #${signed.log.index + 1} of ${checkpoint[1]} in ${checkpoint[0]}'s log, signed by ${payload.iss} with key ${signed.kid}.`,
    ]);
    expect(await page.locator("#standings tbody tr").count()).toBe(5);
  } finally {
    await browser.close();
  }
}, 60_000);
