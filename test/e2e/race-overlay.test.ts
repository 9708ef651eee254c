/**
 * The overlay's race view (`GET /board?key=…&race=<slug>`, issue 29 item 7) in a real headless Chromium,
 * following a race stream (each event the race JSON of docs/api.md; live-overlay.test.ts runs it on the built
 * server): the page is this repository's OverlayPage, served with an admission that admits every call, beside a
 * stand-in `/races/monthly/stream` that sends the race as SSE events and later ones on demand, to test the
 * clock and every state in seconds. It shows
 * the title, shared ranks with the prize next to each, a countdown from the server's `now` (not the
 * browser's clock), the next race's start, "in review" and then "final results" with the digest's first
 * characters without a reload, weighted totals for a weighted race, and the reason for a wrong race.
 * The same stand-in serves a board stream that answers 503 a given number of times, beside a page admission
 * that does too: a page opened during a 503 recovers by itself. The screenshot is kept in
 * test-artifacts/race-overlay.png (UPDATE_SCREENSHOTS=1 also writes
 * docs/overlay-race.png, the one docs/api.md shows).
 */
import { copyFileSync, mkdirSync } from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OverlayPage } from "../../src/boards/wire/overlay-page.js";
import { ServiceError } from "../../src/platform/errors/catalogue.js";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_ENV, overlayRows, rowsWhenShown } from "../support/browser.js";
import { listenOnFreePort } from "../support/listen.js";
import { DIGEST, ENDS_AT, overlayRace as race } from "../support/overlay-races.js";
import { until } from "../support/polling.js";

const SCREENSHOT = fileURLToPath(new URL("../../test-artifacts/race-overlay.png", import.meta.url));
const DOCS_SCREENSHOT = fileURLToPath(new URL("../../docs/overlay-race.png", import.meta.url));
let server: http.Server;
let baseUrl = "";
let browser: Browser;
let current: unknown = race("live", ENDS_AT + 1 - 86_405);
/** How many more page requests, and board stream requests, answer 503 (the database is unavailable). */
let pagesUnavailable = 0;
let polledReads = 0;
let boardStreamsUnavailable = 0;
const UNAVAILABLE = "the leaderboard database is unavailable right now. Retry shortly";
const streams = new Set<http.ServerResponse>();

const frame = (value: unknown) => `event: race\ndata: ${JSON.stringify({ data: value, errors: null })}\n\n`;

/** Sends a new state of the race to every open stream. */
function publish(value: unknown): void {
  current = value;
  for (const res of streams) res.write(frame(value));
}

beforeAll(async () => {
  const page = new OverlayPage({
    basePath: "",
    admit: async () => {
      if (pagesUnavailable > 0) {
        pagesUnavailable -= 1;
        throw new ServiceError("DATABASE_UNAVAILABLE", UNAVAILABLE, { retryAfterSeconds: 1 });
      }
      return { headers: {}, caller: { defaultRankBy: null } };
    },
  });
  server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (page.matches(path ?? "")) return void page.handle(req, res);
    if (path === "/races/monthly/stream") {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" });
      res.write(`retry: 2000\n\n${frame(current)}`);
      streams.add(res);
      req.on("close", () => streams.delete(res));
      return;
    }
    // An instance without the race stream (an older one during a deploy): only the race's REST read.
    if (path === "/races/polled") {
      polledReads += 1;
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ data: race("live", ENDS_AT - 3_600), errors: null }));
      return;
    }
    if (path === "/top-affiliate-wagers-by-period/stream") {
      if (boardStreamsUnavailable > 0) {
        boardStreamsUnavailable -= 1;
        res.writeHead(503, { "content-type": "application/json; charset=utf-8", "retry-after": "1" });
        res.end(JSON.stringify({ data: null, errors: [{ code: "unavailable", message: UNAVAILABLE }] }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" });
      res.write(
        `retry: 2000\n\nevent: board\nid: 1\ndata: {"data":[{"username":"blaze_1007","avatar":"","totalWagered":1234.5}],"errors":null}\n\n`,
      );
      streams.add(res);
      req.on("close", () => streams.delete(res));
      return;
    }
    res.writeHead(404).end();
  });
  baseUrl = `http://127.0.0.1:${await listenOnFreePort(server)}`;
  mkdirSync(fileURLToPath(new URL("../../test-artifacts", import.meta.url)), { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, env: CHROMIUM_ENV });
}, 60_000);

afterAll(async () => {
  for (const res of streams) res.end();
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
});

const rows = (page: Page) => overlayRows(page, true);

async function open(path: string, viewport = { width: 800, height: 480 }) {
  const page = await browser.newPage({ viewport });
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
  const response = await page.goto(`${baseUrl}${path}`);
  return { page, response, violations };
}

describe("the race overlay", () => {
  it("shows the title, shared ranks with their prizes, a countdown from the server's clock and the next race", async () => {
    publish(race("live", ENDS_AT + 1 - 86_405));
    const { page, violations } = await open("/board?key=tw_pub_x&race=monthly&mask=true");
    expect(await rowsWhenShown(page, 4, true)).toEqual([
      ["1", "bl***07", "91,234.50", "5,000.00 USD"],
      ["2", "no***14", "500.00", "2,500.00 USD"],
      ["2", "re***21", "500.00", "2,500.00 USD"],
      ["4", "ka***00", "12.35", ""],
    ]);
    expect([await page.textContent("h1"), await page.title()]).toEqual([
      "$10,000 monthly race",
      "$10,000 monthly race",
    ]);
    // One day and five seconds before the end by the server's clock, whatever the browser's says.
    const first = await page.textContent("#period");
    expect(first).toMatch(/^Ends in 1d 00:00:0[3-5]$/);
    const later = await until(
      "the countdown moving",
      () => page.textContent("#period"),
      (text) => text !== first,
    );
    expect(later).toMatch(/^Ends in 1d 00:00:0[2-4]$/);
    expect(await page.textContent("#next")).toMatch(/^Next race starts in 1d 00:00:0[2-5]$|^Next race starts /);
    expect(await page.isVisible("#next")).toBe(true);
    // Every row inside the 800 × 480 source.
    expect(await page.evaluate("document.documentElement.scrollHeight <= window.innerHeight")).toBe(true);
    expect(violations).toEqual([]);
    await page.screenshot({ path: SCREENSHOT });
    if (process.env.UPDATE_SCREENSHOTS === "1") copyFileSync(SCREENSHOT, DOCS_SCREENSHOT);
    await page.close();
  });

  it("flips to in review and then to final results with the digest, without a reload", async () => {
    publish(race("live", ENDS_AT - 10));
    const { page, violations } = await open("/board?key=tw_pub_x&race=monthly&theme=transparent");
    await rowsWhenShown(page, 4, true);
    await page.evaluate("window.marker = 1");
    expect(await page.textContent("#period")).toMatch(/^Ends in 00:00:(09|10|11)$/);
    expect(await page.textContent("#next")).toMatch(/^Next race starts in 00:00:(09|10|11)$/);
    publish(race("reviewing", ENDS_AT + 1, { next: { id: "race_bcdefghijklmnopqrstu", startsAt: ENDS_AT + 1 } }));
    expect(
      await until(
        "in review",
        () => page.textContent("#period"),
        (text) => text?.startsWith("In review") === true,
      ),
    ).toMatch(/^In review · final results in 2[34]:59:5\d$/);
    publish(
      race("final", ENDS_AT + 86_401, {
        next: null,
        result: { digest: DIGEST, frozenAt: ENDS_AT + 86_401 },
      }),
    );
    expect(
      await until(
        "final results",
        () => page.textContent("#period"),
        (text) => text?.startsWith("Final") === true,
      ),
    ).toBe("Final results · digest 0123456789ab");
    expect(await page.isVisible("#next")).toBe(false);
    expect(await page.evaluate("window.marker")).toBe(1);
    expect(violations).toEqual([]);
    await page.close();
  });

  it("shows a weighted race's weighted totals, and all its rows on a phone", async () => {
    const weighted = race("live", ENDS_AT - 100, {
      rankBy: "weighted",
      entries: [
        {
          rank: 1,
          username: "blaze_1007",
          avatar: "",
          totalWagered: 1000,
          totalWageredDecimal: "1000",
          weightedWagered: 100.5,
          weightedWageredDecimal: "100.5",
          prize: "5000.00",
        },
      ],
    });
    publish(weighted);
    const { page } = await open("/board?key=tw_pub_x&race=monthly", { width: 390, height: 844 });
    expect(await rowsWhenShown(page, 1, true)).toEqual([["1", "blaze_1007", "100.50", "5,000.00 USD"]]);
    expect(await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")).toBe(true);
    expect(await page.evaluate("document.documentElement.scrollHeight <= window.innerHeight")).toBe(true);
    await page.close();
  });

  it("is readable at 1920×1080: all rows inside, text about twice the 800×480 size", async () => {
    publish(race("live", ENDS_AT - 100));
    const sizes: number[] = [];
    for (const viewport of [
      { width: 800, height: 480 },
      { width: 1920, height: 1080 },
    ]) {
      const { page } = await open("/board?key=tw_pub_x&race=monthly", viewport);
      await rowsWhenShown(page, 4, true);
      expect(await page.evaluate("document.documentElement.scrollHeight <= window.innerHeight")).toBe(true);
      sizes.push(
        Number.parseFloat(String(await page.evaluate("getComputedStyle(document.querySelector('.name')).fontSize"))),
      );
      await page.close();
    }
    expect(sizes[1]).toBeGreaterThan((sizes[0] ?? 0) * 1.8);
  });

  it("refuses a wrong race, or a period beside it, naming the parameter", async () => {
    const { page, response } = await open("/board?key=tw_pub_x&race=Monthly%20Race&numUsers=3");
    expect(response?.status()).toBe(400);
    expect(await page.textContent("#message")).toBe("The leaderboard is not available right now.");
    expect(await page.textContent("#detail")).toBe(
      'This leaderboard cannot be shown: race must be a race\'s slug (e.g. monthly) or id (race_…), got "Monthly Race". numUsers is not for a race (the race has its own period and rows). Check the address of this page (race, mask, theme).',
    );
    await page.close();
  });
});

describe("the overlay while the service answers 503", () => {
  it("opened during a 503, then refused again by its stream, recovers by itself and says nothing about the key", async () => {
    pagesUnavailable = 1;
    boardStreamsUnavailable = 2;
    const { page, response, violations } = await open(
      "/board?key=tw_pub_x&startTimestamp=1735689600&endTimestamp=1738367999&numUsers=5",
    );
    expect(response?.status()).toBe(503);
    expect(await page.textContent("#message")).toBe("The leaderboard will be back in a moment.");
    expect(await page.textContent("#detail")).toMatch(
      /^This leaderboard cannot be shown: the leaderboard database is unavailable right now\. Retry shortly\. Trying again in [12] s\.$/,
    );
    expect(
      await until(
        "the board",
        () => rows(page),
        (r) => r.length === 1,
        15_000,
      ),
    ).toEqual([["1", "blaze_1007", "1,234.50", undefined]]);
    expect(boardStreamsUnavailable).toBe(0);
    expect([await page.textContent("#status"), await page.isVisible("#message")]).toEqual(["live", false]);
    expect(violations).toEqual([]);
    await page.close();
  }, 30_000);
});

describe("the race overlay without a race stream", () => {
  it("reads the race every 3 s instead, and keeps its rows while its version does not change", async () => {
    const { page, violations } = await open("/board?key=tw_pub_x&race=polled");
    await rowsWhenShown(page, 4, true);
    expect(await page.textContent("#period")).toMatch(/^Ends in 00:59:5\d$|^Ends in 01:00:00$/);
    await page.evaluate("document.querySelector('.row').dataset.mark = 'first'");
    const before = polledReads;
    await until(
      "two more reads",
      async () => polledReads,
      (n) => n >= before + 2,
      10_000,
    );
    expect(await page.evaluate("document.querySelector('.row').dataset.mark")).toBe("first");
    expect([await page.textContent("#status"), await page.isVisible("#message")]).toEqual(["live", false]);
    expect(violations).toEqual([]);
    await page.close();
  }, 20_000);
});
