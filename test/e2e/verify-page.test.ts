/**
 * The verify page (issue 36 item 3, issue 46 parts 1 and 3) in Chromium (playwright-core, /usr/bin/chromium), as
 * the operator serves it: for a real signed and logged result it says "Valid: result #1 of 2 in
 * casino.example/topwagers's log, signed by …" and shows the issuer, the key, the chain link, the log, the
 * standings, the prize table, what is unallocated and the history's notes. Served by another server that answers
 * something else as the race's signed result (the page, the JWK Sets and the log's key as ours serves them), it
 * names the real reason and shows nothing of the payload: every kind of signed object (a live race event and a live
 * board rebuilt as compact JWSs with the live key, a live event as 0.4.0 signed it with the result key), a byte
 * changed, another race's result, `alg: none`, a key that is not the operator's, and a result 0.4.0 signed that is
 * in no log. The signature and the log are checked by the browser's WebCrypto, not by our server. Every answer the
 * page reads is open to other origins (Access-Control-Allow-Origin: *), a 404 too.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_ENV } from "../support/browser.js";
import { createKey } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { until } from "../support/polling.js";
import { useTestServer } from "../support/server.js";
import { everyKindSigned, type SignedKinds, tampered } from "../support/signed-kinds.js";

const ISSUER = "https://casino.example";
const SCREENS = process.env.SCREENSHOT_DIR;
const server = useTestServer("verify_page", { ISSUER });
let raceId = "";
let kid = "";
let kinds: SignedKinds;
let context: BrowserContext;
let tampering: Server;
let tamperingUrl = "";
/** What the other server answers as any race's signed result. */
let substitute = "";

/** Serves what our server serves, but `substitute` as the JWS of every signed result (and no place in the log). */
function tamperingServer(): Server {
  return createServer(async (req, res) => {
    const answer = await fetch(`${server.baseUrl}${req.url}`);
    const substituted = req.url?.endsWith("/signed") === true;
    const body = substituted
      ? Buffer.from(JSON.stringify({ jws: substitute, kid: "", sha256: "", log: null }))
      : Buffer.from(await answer.arrayBuffer());
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "content-security-policy"]) {
      const value = answer.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    res.writeHead(substituted ? 200 : answer.status, headers).end(body);
  });
}

const chromiumMissing = existsSync(CHROMIUM) ? undefined : `SKIPPED: no Chromium at ${CHROMIUM}`;

beforeAll(async () => {
  kinds = await everyKindSigned(server, "verify-aff", ISSUER);
  kid = kinds.resultKid;
  raceId = kinds.result.raceId as string;
  tampering = tamperingServer();
  tamperingUrl = `http://127.0.0.1:${await listenOnFreePort(tampering)}`;
  if (chromiumMissing !== undefined) return;
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "topwagers-chromium-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    env: CHROMIUM_ENV,
    viewport: { width: 900, height: 900 },
  });
});

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => tampering?.close(resolve));
});

/** What the page shows of a payload: its visible standings rows, prize rows and facts. */
const SHOWN = `(() => {
  const visible = (selector) => [...document.querySelectorAll(selector)].filter((e) => e.checkVisibility()).length;
  return visible("#standings tbody tr") + visible("#prizes tbody tr") + visible("#facts dt");
})()`;

/**
 * The page's verdict on race `race` once it has checked: its state, its text, and how many standings rows, prize
 * rows and facts it shows; `read` reads more of the page before it closes.
 */
async function verdict(
  baseUrl: string,
  screenshot: string,
  race = raceId,
  read: (page: Page) => Promise<void> = async () => {},
): Promise<[string | null, string, number]> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  try {
    await page.goto(`${baseUrl}/verify/${race}`, { waitUntil: "load" });
    const status = page.locator("#status:not([data-state=checking])");
    await status.waitFor({ timeout: 15_000 });
    if (SCREENS !== undefined) await page.screenshot({ path: join(SCREENS, screenshot), fullPage: true });
    expect(problems).toEqual([]);
    await read(page);
    return [await status.getAttribute("data-state"), (await status.textContent()) ?? "", await page.evaluate(SHOWN)];
  } finally {
    await page.close();
  }
}

/** The texts of a table's body rows, cell by cell. */
const cells = (page: Page, table: string) =>
  page.$$eval(`#${table} tbody tr`, (rows) => rows.map((r) => [...r.querySelectorAll("td")].map((c) => c.textContent)));

describe("the verify page", () => {
  it("answers the signed result without a key, and the short link leads to the page", async () => {
    // Short-lived until a checkpoint holds the result's log entry, the same bytes forever from then on.
    const pending = await fetch(`${server.baseUrl}/verify/${raceId}/signed`);
    expect([pending.status, pending.headers.get("cache-control")]).toEqual([200, "public, max-age=1"]);
    expect(((await pending.json()) as { log: { checkpoint: unknown } }).log.checkpoint).toBeNull();
    await server.app.resultsLog.sequencer.run();
    const signed = await fetch(`${server.baseUrl}/verify/${raceId}/signed`);
    expect([signed.status, signed.headers.get("cache-control")]).toEqual([200, "public, max-age=31536000, immutable"]);
    const answer = (await signed.json()) as { kid: string; log: { index: number; checkpoint: string } };
    expect(answer.kid).toBe(kid);
    expect(answer.log.index).toBeGreaterThanOrEqual(0);
    expect(answer.log.checkpoint).toMatch(/^casino\.example\/topwagers\n[1-9][0-9]*\n/);
    const short = await fetch(`${server.baseUrl}/v/${raceId.slice("race_".length)}`, { redirect: "manual" });
    expect([short.status, short.headers.get("location")]).toEqual([302, `/verify/${raceId}`]);
    // Every answer the page reads is open to a page of another origin, a missing result's 404 too.
    const open = async (path: string) => {
      const answer = await fetch(`${server.baseUrl}${path}`, { headers: { origin: "https://fans.example" } });
      return [path, answer.status, answer.headers.get("access-control-allow-origin")];
    };
    expect(
      await Promise.all(
        [
          "/.well-known/jwks.json",
          "/.well-known/jwks-live.json",
          `/verify/${raceId}/signed`,
          "/verify/race_aaaaaaaaaaaaaaaaaaaa/signed",
          "/log/vkey",
          "/log/checkpoint",
        ].map(open),
      ),
    ).toEqual([
      ["/.well-known/jwks.json", 200, "*"],
      ["/.well-known/jwks-live.json", 200, "*"],
      [`/verify/${raceId}/signed`, 200, "*"],
      ["/verify/race_aaaaaaaaaaaaaaaaaaaa/signed", 404, "*"],
      ["/log/vkey", 200, "*"],
      ["/log/checkpoint", 200, "*"],
    ]);
    // One static file: the same bytes at /verify and at each race's address, with the operator's strict policy.
    const [asking, checking] = await Promise.all([
      fetch(`${server.baseUrl}/verify`),
      fetch(`${server.baseUrl}/verify/${raceId}`),
    ]);
    expect(await asking.text()).toBe(await checking.text());
    expect(checking.headers.get("content-security-policy")).toMatch(
      /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]{43}='; style-src 'sha256-[A-Za-z0-9+/]{43}='; connect-src 'self'; base-uri 'none'; form-action 'none'$/,
    );
  });

  it.skipIf(chromiumMissing !== undefined)(
    "says valid for a real result in the log, with its issuer, key, chain, log, standings and prize table",
    async () => {
      const seen: Record<string, unknown> = {};
      const read = async (page: Page) => {
        seen.seal = await page.textContent("#seal");
        seen.log = await page.textContent("#facts dt:text-is('Log') + dd");
        seen.standings = await cells(page, "standings");
        seen.prizes = await cells(page, "prizes");
        seen.unallocated = await page.textContent("#unallocated");
        seen.notes = await page.$$eval("#notes p", (lines) => lines.map((line) => line.textContent));
      };
      // Two standings rows, two prize rows and ten facts (issuer, key, race, affiliate, period, rules, frozen at,
      // digest, chain, log). The race is the log's first entry; the checkpoint holding it also holds the next race's.
      expect(await verdict(server.baseUrl, "verify-valid.png", raceId, read)).toEqual([
        "valid",
        `Valid: result #1 of 2 in casino.example/topwagers's log, signed by ${ISSUER} with key ${kid}.`,
        14,
      ]);
      expect(seen).toEqual({
        seal: "✓ Result #1 of 2 in casino.example/topwagers's log · signed by https://casino.example",
        log: "result #1 of 2 in casino.example/topwagers's log",
        standings: [
          ["1", "alice", "300 USD", "100.00"],
          ["2", "bob", "200.5 USD", "50.00"],
        ],
        prizes: [
          ["1st", "100.00 USD", "alice"],
          ["2nd", "50.00 USD", "bob"],
        ],
        unallocated: "Unallocated: 0.00 USD (prizes no one won).",
        notes: [
          "Users excluded by changes after the race was made: 0 (0 added, 0 removed).",
          "Voids: 0 voided wagers of 0 users while live or in review; no rank moved.",
          "Late wagers: 0 dated in the race, recorded after its end and before its freeze, of 0 users; no rank moved.",
        ],
      });
    },
  );

  it.skipIf(chromiumMissing !== undefined)(
    "the overlay marks the final race as verified by the issuer, with the short link",
    async () => {
      const key = await createKey(server.database.db, "verify-aff", null, { publishable: true, allowedOrigins: [] });
      const signed = (await (await fetch(`${server.baseUrl}/verify/${raceId}/signed`)).json()) as { jws: string };
      const payload = JSON.parse(Buffer.from(signed.jws.split(".")[1] as string, "base64url").toString("utf8"));
      const page = await context.newPage();
      try {
        await page.goto(`${server.baseUrl}/board?key=${key.secret}&race=${raceId}`);
        const line = await until(
          "the mark",
          () => page.textContent("#mark"),
          (t) => t?.includes("verified") === true,
          15_000,
        );
        if (SCREENS !== undefined) await page.screenshot({ path: join(SCREENS, "overlay-final-verified.png") });
        expect(line).toBe(`✓ verified by ${ISSUER} · 127.0.0.1:${server.port}/v/${raceId.slice("race_".length)}`);
        expect(await page.textContent("#period")).toBe(`Final results · digest ${String(payload.digest).slice(0, 12)}`);
      } finally {
        await page.close();
      }
    },
  );

  it.skipIf(chromiumMissing !== undefined)(
    "takes the signature of a result as 0.4.0 signed it (no typ, no state), and shows nothing of it: it is in no log",
    async () => {
      substitute = kinds.oldResult.jws;
      expect(await verdict(tamperingUrl, "verify-unlogged-0.4.0.png")).toEqual([
        "invalid",
        `Not accepted: the result is validly signed by ${ISSUER} but is not in its log (frozen before the log began, or left out of it).`,
        0,
      ]);
    },
  );

  /** Each thing another server answers as the signed result, the race whose page is opened, and what it says. */
  const REFUSALS: readonly { what: string; jws: () => string; race?: () => string; says: () => string }[] = [
    {
      what: "a result changed by another server",
      jws: () => tampered(kinds.result.jws),
      says: () => "Signature invalid: the result was changed after it was signed.",
    },
    {
      what: "another race's result",
      jws: () => kinds.result.jws,
      race: () => kinds.next.raceId as string,
      says: () => `Not accepted for this race: the signed result is of ${raceId}, not ${kinds.next.raceId}.`,
    },
    {
      what: "a live race event rebuilt as a compact JWS",
      jws: () => kinds.liveRace.jws,
      race: () => kinds.liveRace.raceId as string,
      says: () =>
        `Not accepted: this is a live snapshot, not a final result (race ${kinds.liveRace.raceId}'s standings at one moment while it ran, not who won).`,
    },
    {
      what: "a live board rebuilt as a compact JWS",
      jws: () => kinds.liveBoard.jws,
      says: () =>
        "Not accepted: this is a live snapshot, not a final result (a board's standings at one moment, not who won).",
    },
    {
      what: "a live race event as 0.4.0 signed it",
      jws: () => kinds.oldLiveRace.jws,
      race: () => kinds.oldLiveRace.raceId as string,
      says: () =>
        `Not accepted: this is a live snapshot, not a final result (race ${kinds.oldLiveRace.raceId}'s standings at one moment while it ran, not who won).`,
    },
    {
      what: "the result with alg: none",
      jws: () => kinds.algNone.jws,
      says: () => "Signature invalid: this is not an EdDSA signature (alg: none).",
    },
    {
      what: "the result signed by a key that is not the operator's",
      jws: () => kinds.foreign.jws,
      says: () => "Signature invalid: the key not-ours is not one of this operator's keys.",
    },
  ];

  for (const [index, { what, jws, race, says }] of REFUSALS.entries()) {
    it.skipIf(chromiumMissing !== undefined)(`names the reason, showing nothing of it, for ${what}`, async () => {
      substitute = jws();
      expect(await verdict(tamperingUrl, `verify-refused-${index + 1}.png`, race?.() ?? raceId)).toEqual([
        "invalid",
        says(),
        0,
      ]);
    });
  }
});
