/**
 * The overlay page `GET /board` in a real headless Chromium (Debian's
 * /usr/bin/chromium driven by playwright-core) against the built server
 * (spawned): it shows the board from the SSE stream with a publishable key in
 * its address, masks names, formats exact totals, shows a new leader without
 * a reload when a wager is recorded, reconnects by itself when the server
 * restarts, renders a hostile username as text, makes no request but to its
 * origin and the avatars, breaks no CSP rule, fits a phone, and shows a
 * readable message for an invalid key or period. The screenshot is kept in
 * test-artifacts/overlay.png (UPDATE_SCREENSHOTS=1 also writes
 * docs/overlay.png, the one docs/api.md shows).
 */
import { copyFileSync } from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/config.js";
import { CHROMIUM, CHROMIUM_ARGS } from "../support/browser.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { OpenApiChecker } from "../support/openapi.js";
import { freePort, type ServerProcess, startServerProcess } from "../support/processes.js";

const SCREENSHOT = fileURLToPath(new URL("../../test-artifacts/overlay.png", import.meta.url));
const DOCS_SCREENSHOT = fileURLToPath(new URL("../../docs/overlay.png", import.meta.url));
const PERIOD = `startTimestamp=${JAN_1_2025}&endTimestamp=${JAN_1_2025 + 31 * 86_400 - 1}`;
const HOSTILE = "<img src=x onerror=\"document.title='owned'\">";

let database: TestDatabase;
let server: ServerProcess;
let port = 0;
let browser: Browser;
let key = "";

function start(): Promise<ServerProcess> {
  return startServerProcess({
    DATABASE_URL: database.url,
    PORT: String(port),
    RATE_LIMIT_POINTS: "100000",
    PUBLISHABLE_RATE_LIMIT_POINTS: "100000",
    STREAM_HEARTBEAT_S: "2",
  });
}

/** A page that records its requests and CSP violations. */
async function open(path: string, viewport = { width: 960, height: 540 }) {
  const page = await browser.newPage({ viewport });
  const requests: string[] = [];
  const violations: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  page.on("dialog", (dialog) => {
    violations.push(`dialog: ${dialog.message()}`);
    void dialog.dismiss();
  });
  const response = await page.goto(`${server.baseUrl}${path}`);
  return { page, response, requests, violations };
}

const rows = (page: Page) =>
  page.$$eval(".row", (list) =>
    list.map((row) => [
      row.querySelector(".rank")?.textContent,
      row.querySelector(".name")?.textContent,
      row.querySelector(".total")?.textContent,
    ]),
  );

async function until<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!ok(value)) {
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}

/** A page of this width and height, once it shows `count` rows. */
async function openWithRows(path: string, width: number, height: number, count: number) {
  const opened = await open(path, { width, height });
  await until(
    `${count} rows`,
    () => rows(opened.page),
    (r) => r.length === count,
  );
  return opened;
}

/** Avatars as a player's would be: images on another host (here a local one), one colour per name. */
let avatarServer: http.Server;
let avatars = "";

function avatarSvg(name: string): string {
  const hue = [...name].reduce((sum, c) => sum + (c.codePointAt(0) ?? 0) * 37, 0) % 360;
  const initials = name
    .slice(0, 2)
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, "");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96"><rect width="96" height="96" fill="hsl(${hue},65%,45%)"/><text x="48" y="61" font-family="sans-serif" font-size="38" font-weight="700" fill="#fff" text-anchor="middle">${initials}</text></svg>`;
}

beforeAll(async () => {
  avatarServer = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "image/svg+xml" });
    res.end(avatarSvg(decodeURIComponent((req.url ?? "/").split("/").pop() ?? "").replace(/\.svg$/, "")));
  });
  avatars = `http://127.0.0.1:${await listenOnFreePort(avatarServer)}/avatars`;
  database = await createTestDatabase("live_overlay");
  port = await freePort();
  await addUsers(database.db, [
    { id: "ov-1", affiliateId: "aff-ov", username: "blaze_1007", avatar: "https://avatars.example.test/1.png" },
    { id: "ov-2", affiliateId: "aff-ov", username: "nova_1014", avatar: "" },
    { id: "ov-3", affiliateId: "aff-ov", username: HOSTILE, avatar: "javascript:alert(1)" },
  ]);
  await addWagers(database.db, [
    wager("ov-1", "44559.4614105", JAN_1_2025 + 60),
    wager("ov-2", "19330.515", JAN_1_2025 + 120),
    wager("ov-3", "1234567.004", JAN_1_2025 + 180),
  ]);
  server = await start();
  key = (await createKey(database.db, "aff-ov", null, { publishable: true, allowedOrigins: [server.baseUrl] })).secret;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 60_000);

afterAll(async () => {
  avatarServer?.close();
  await browser?.close();
  await server?.stop();
  await database?.drop();
});

describe("the overlay page", () => {
  it("is one page under 20 KB with a strict CSP and no Referer", async () => {
    const response = await fetch(`${server.baseUrl}/board?key=${key}&${PERIOD}&numUsers=5`);
    const body = Buffer.from(await response.arrayBuffer());
    expect(response.status).toBe(200);
    expect(body.length).toBeLessThan(20 * 1024);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("referrer-policy")).toBe("no-referrer");
    const checker = await OpenApiChecker.load();
    const observed = { status: response.status, headers: Object.fromEntries(response.headers), text: body.toString() };
    expect(checker.check("/board", "get", observed)).toEqual([]);
    expect(response.headers.get("content-security-policy")).toMatch(
      /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]+=*'; style-src 'sha256-[A-Za-z0-9+/]+=*'; img-src https: http:; connect-src 'self'; base-uri 'none'; form-action 'none'$/,
    );
  });

  it("shows the board masked with exact totals, then the new leader without a reload; hostile data stays text", async () => {
    const { page, requests, violations } = await open(`/board?key=${key}&${PERIOD}&numUsers=5&mask=true&theme=dark`);
    // Set in the page now, still there later only if the page was never reloaded.
    await page.evaluate("window.marker = 1");
    expect(
      await until(
        "three rows",
        () => rows(page),
        (r) => r.length === 3,
      ),
    ).toEqual([
      ["1", '<i***">', "1,234,567.00"],
      ["2", "bl***07", "44,559.46"],
      ["3", "no***14", "19,330.52"],
    ]);
    expect(await page.textContent("#status")).toBe("live");

    const since = Date.now();
    await addWagers(database.db, [wager("ov-2", "2000000", JAN_1_2025 + 300)]);
    const after = await until(
      "the new leader",
      () => rows(page),
      (r) => r[0]?.[1] === "no***14",
    );
    expect(Date.now() - since).toBeLessThan(1_500);
    expect(after).toEqual([
      ["1", "no***14", "2,019,330.52"],
      ["2", '<i***">', "1,234,567.00"],
      ["3", "bl***07", "44,559.46"],
    ]);
    expect(await page.evaluate("window.marker")).toBe(1);
    expect(await page.title()).toBe("Top wagers");
    expect(await page.$$("img[src='x']")).toEqual([]);
    expect(violations).toEqual([]);
    // Nothing but this origin and the avatars (a user's own, and the default one for users without).
    const allowed = new Set(["https://avatars.example.test/1.png", DEFAULT_AVATAR_URL]);
    expect(requests.filter((url) => !url.startsWith(`${server.baseUrl}/`) && !allowed.has(url))).toEqual([]);
    expect(await page.$$("img.ready")).toEqual([]);
    expect(requests.some((url) => url.startsWith("javascript:"))).toBe(false);
    await page.close();
  });

  it("shows full names unmasked, fits a phone, and reconnects by itself when the server restarts", async () => {
    const { page } = await openWithRows(`/board?key=${key}&${PERIOD}&numUsers=5&theme=transparent`, 390, 844, 3);
    expect((await rows(page)).map((r) => r[1])).toEqual(["nova_1014", HOSTILE, "blaze_1007"]);
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    await server.stop();
    server = await start();
    await addWagers(database.db, [wager("ov-1", "5000000", JAN_1_2025 + 400)]);
    const back = await until(
      "the board after the restart",
      () => rows(page),
      (r) => r[0]?.[1] === "blaze_1007",
      10_000,
    );
    expect(back[0]).toEqual(["1", "blaze_1007", "5,044,559.46"]);
    expect(await page.textContent("#status")).toBe("live");
    await page.close();
  }, 30_000);

  it("takes the screenshot docs/api.md shows: a masked top 6 with avatars, dark theme", async () => {
    const demo = (await createKey(database.db, "aff-demo", null, { publishable: true, allowedOrigins: [] })).secret;
    const names = ["blaze_1007", "nova_1014", "rex_1021", "kai_1500", "luna_2000", "ace_1443"];
    await addUsers(
      database.db,
      names.map((name, i) => ({
        id: `demo-${i}`,
        affiliateId: "aff-demo",
        username: name,
        avatar: `${avatars}/${name}.svg`,
      })),
    );
    await addWagers(
      database.db,
      names.map((_, i) =>
        wager(
          `demo-${i}`,
          ["44559.4614105", "19330.5100052", "14199.99090758", "9120.75", "4388.1", "1250"][i] ?? "1",
          JAN_1_2025 + 60,
        ),
      ),
    );
    const { page, violations } = await openWithRows(`/board?key=${demo}&${PERIOD}&numUsers=6&mask=true`, 800, 480, 6);
    await until(
      "avatars loaded",
      () => page.$$eval("img.ready", (list) => list.length),
      (n) => n === 6,
    );
    expect((await rows(page))[0]).toEqual(["1", "bl***07", "44,559.46"]);
    expect(violations).toEqual([]);
    await page.screenshot({ path: SCREENSHOT });
    if (process.env.UPDATE_SCREENSHOTS === "1") copyFileSync(SCREENSHOT, DOCS_SCREENSHOT);
    await page.close();
  });

  it("shows a readable message for a bad period, an unknown key or a secret key, instead of a blank page", async () => {
    const secret = (await createKey(database.db, "aff-ov")).secret;
    const cases: [string, number, string][] = [
      [
        `/board?key=${key}&startTimestamp=${JAN_1_2025}&endTimestamp=1&numUsers=0`,
        400,
        "endTimestamp must not be before startTimestamp (both are inclusive. Equal means one second). numUsers must be between 1 and 100",
      ],
      [`/board?key=tw_pub_${"A".repeat(38)}&${PERIOD}&numUsers=5`, 401, "missing or invalid API key"],
      [`/board?key=${secret}&${PERIOD}&numUsers=5`, 401, "secret"],
      [
        `/board?key=${key}&${PERIOD}&numUsers=5&theme=neon`,
        400,
        'theme must be dark, light or transparent, got "neon"',
      ],
    ];
    const checker = await OpenApiChecker.load();
    for (const [path, status, text] of cases) {
      const { page, response, violations } = await open(path);
      expect(response?.status()).toBe(status);
      const observed = { status, headers: await response?.allHeaders(), text: (await response?.text()) ?? "" };
      expect(checker.check("/board", "get", { ...observed, headers: observed.headers ?? {} })).toEqual([]);
      const message = await page.textContent("#message");
      expect(message?.startsWith("This leaderboard cannot be shown: ")).toBe(true);
      expect(message).toContain(text);
      expect(await page.isVisible("#message")).toBe(true);
      expect(violations).toEqual([]);
      await page.close();
    }
  });
});
