/**
 * The verify page (issue 36 item 3) in Chromium (playwright-core, /usr/bin/chromium): for a real signed result
 * it says "Signature valid" and shows the issuer, the key, the chain link and the standings; served by another
 * server with one character of the signed result changed (the page and the JWK Set as ours serves them), it says
 * the signature is invalid. The signature is checked by the browser's WebCrypto, not by our server.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, CHROMIUM_ARGS } from "../support/browser.js";
import { createKey } from "../support/fixtures.js";
import { listenOnFreePort } from "../support/listen.js";
import { until } from "../support/polling.js";
import { useTestServer } from "../support/server.js";
import { activeSigningKey, signedRace } from "../support/signed-races.js";

const ISSUER = "https://casino.example";
const SCREENS = process.env.SCREENSHOT_DIR;
const server = useTestServer("verify_page", { ISSUER });
let raceId = "";
let kid = "";
let context: BrowserContext;
let tampering: Server;
let tamperingUrl = "";

/** Serves what our server serves, but the signed result with bob's name changed in its payload. */
function tamperingServer(): Server {
  return createServer(async (req, res) => {
    const answer = await fetch(`${server.baseUrl}${req.url}`);
    let body = Buffer.from(await answer.arrayBuffer());
    if (req.url?.endsWith("/signed")) {
      const signed = JSON.parse(body.toString("utf8")) as { jws: string };
      const [header, payload, signature] = signed.jws.split(".") as [string, string, string];
      const changed = Buffer.from(payload, "base64url").toString("utf8").replace('"bob"', '"rob"');
      signed.jws = [header, Buffer.from(changed, "utf8").toString("base64url"), signature].join(".");
      body = Buffer.from(JSON.stringify(signed));
    }
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "content-security-policy"]) {
      const value = answer.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    res.writeHead(answer.status, headers).end(body);
  });
}

const chromiumMissing = existsSync(CHROMIUM) ? undefined : `SKIPPED: no Chromium at ${CHROMIUM}`;

beforeAll(async () => {
  kid = (await activeSigningKey(server.database.db)).kid;
  raceId = await signedRace(server.database.db, "verify-aff", ISSUER);
  tampering = tamperingServer();
  tamperingUrl = `http://127.0.0.1:${await listenOnFreePort(tampering)}`;
  if (chromiumMissing !== undefined) return;
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "topwagers-chromium-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 900, height: 900 },
  });
});

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => tampering?.close(resolve));
});

/** The page's verdict once it has checked: its state and its text. */
async function verdict(baseUrl: string, screenshot: string): Promise<[string | null, string]> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(error.message));
  try {
    await page.goto(`${baseUrl}/verify/${raceId}`, { waitUntil: "load" });
    const status = page.locator("#status:not([data-state=checking])");
    await status.waitFor({ timeout: 15_000 });
    if (SCREENS !== undefined) await page.screenshot({ path: join(SCREENS, screenshot), fullPage: true });
    expect(problems).toEqual([]);
    return [await status.getAttribute("data-state"), (await status.textContent()) ?? ""];
  } finally {
    await page.close();
  }
}

describe("the verify page", () => {
  it("answers the signed result without a key, and the short link leads to the page", async () => {
    const signed = await fetch(`${server.baseUrl}/verify/${raceId}/signed`);
    expect([signed.status, signed.headers.get("cache-control")]).toEqual([200, "public, max-age=31536000, immutable"]);
    expect(((await signed.json()) as { kid: string }).kid).toBe(kid);
    const short = await fetch(`${server.baseUrl}/v/${raceId.slice("race_".length)}`, { redirect: "manual" });
    expect([short.status, short.headers.get("location")]).toEqual([302, `/verify/${raceId}`]);
    expect((await fetch(`${server.baseUrl}/verify/race_aaaaaaaaaaaaaaaaaaaa/signed`)).status).toBe(404);
  });

  it.skipIf(chromiumMissing !== undefined)(
    "says valid for a real result, with its issuer, key, chain and standings",
    async () => {
      expect(await verdict(server.baseUrl, "verify-valid.png")).toEqual([
        "valid",
        `Signature valid: signed by ${ISSUER} with key ${kid}.`,
      ]);
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

  it.skipIf(chromiumMissing !== undefined)("says invalid for a result changed by another server", async () => {
    expect(await verdict(tamperingUrl, "verify-tampered.png")).toEqual([
      "invalid",
      "Signature invalid: the result was changed after it was signed.",
    ]);
  });
});
