/**
 * The interactive reference: GET /docs, its files and GET /openapi.json as
 * served (types, caching, Content-Security-Policy, the document with this
 * server as its server), then the page in a real headless Chromium (Debian's
 * /usr/bin/chromium driven by playwright-core): the operation is shown, and
 * "Try it out" with an API key calls this server and renders the entries, with
 * no request leaving the server's origin and no CSP violation. The screenshot
 * is kept in test-artifacts/docs-page.png.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { DOCS_CONTENT_SECURITY_POLICY } from "../../src/platform/wire/docs-page.js";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_ENV } from "../support/browser.js";
import { DEC_1 } from "../support/dates.js";
import { createKey } from "../support/fixtures.js";
import { addHalfMonthExample, BLAZE_AVATAR, NOVA_AVATAR } from "../support/half-month-example.js";
import { startTestServer, useTestServer } from "../support/server.js";

const SCREENSHOT = new URL("../../test-artifacts/docs-page.png", import.meta.url);
const SCREENSHOT_TOP = new URL("../../test-artifacts/docs-page-top.png", import.meta.url);
/** The server's clock: noon on 1 December 2026, after the document's half-month example. */
const NOW = DEC_1 + 12 * 3600;
const DEFAULT_AVATAR = "https://cdn.example.test/avatars/default.png";
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const DOCUMENT = parse(readFileSync(new URL("../../docs/openapi.yaml", import.meta.url), "utf8"));

/** The second half of November 2026 for the demo affiliate, as the API must answer it. */
const EXPECTED = {
  data: [
    { username: "nova_1023", avatar: NOVA_AVATAR, totalWagered: 15000.5 },
    { username: "ace_1443", avatar: DEFAULT_AVATAR, totalWagered: 12000.75 },
    { username: "blaze_1009", avatar: BLAZE_AVATAR, totalWagered: 0.00000001 },
  ],
  errors: null,
};

const server = useTestServer("docs_page", { DEFAULT_AVATAR_URL: DEFAULT_AVATAR }, { now: () => NOW });
let demoKey: string;

beforeAll(async () => {
  const db = server.database.db;
  demoKey = (await createKey(db, "demo-affiliate")).secret;
  await addHalfMonthExample(db, "demo-affiliate");
});

describe("served files", () => {
  it("serves the page as HTML with a same-origin Content-Security-Policy and no external reference", async () => {
    for (const path of ["/docs", "/docs/", "//docs"]) {
      const response = await fetch(`${server.baseUrl}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("content-security-policy")).toBe(DOCS_CONTENT_SECURITY_POLICY);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      const html = await response.text();
      expect(html).toContain('<script src="/docs/swagger-ui-bundle.js"></script>');
      expect(html).toContain('<script src="/docs/init.js"></script>');
      expect(html).not.toMatch(/https?:\/\//);
      expect(html).not.toMatch(/<script>/); // no inline script: CSP script-src 'self' holds
    }
    expect(DOCS_CONTENT_SECURITY_POLICY).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
        "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it("serves /openapi.json: the YAML document with this server as its only server", async () => {
    const response = await fetch(`${server.baseUrl}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await response.json()).toEqual({ ...DOCUMENT, servers: [{ url: "/", description: "This server" }] });
  });

  it("points the document at BASE_PATH when one is set", async () => {
    const prefixed = await startTestServer("docs_page_base", { BASE_PATH: "/api" });
    try {
      const served = (await (await fetch(`${prefixed.baseUrl}/openapi.json`)).json()) as { servers: unknown };
      expect(served.servers).toEqual([{ url: "/api", description: "This server" }]);
    } finally {
      await prefixed.close();
    }
  });

  it("serves swagger-ui-dist's files from node_modules, gzipped on request, with ETags", async () => {
    const bundle = readFileSync(join(SWAGGER_UI_DIR, "swagger-ui-bundle.js"));
    const plain = await fetch(`${server.baseUrl}/docs/swagger-ui-bundle.js`, {
      headers: { "accept-encoding": "identity" },
    });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(plain.headers.get("cache-control")).toBe("public, max-age=86400");
    expect(Buffer.from(await plain.arrayBuffer()).equals(bundle)).toBe(true);

    const css = await fetch(`${server.baseUrl}/docs/swagger-ui.css`);
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(await css.text()).toBe(readFileSync(join(SWAGGER_UI_DIR, "swagger-ui.css"), "utf8"));

    const zipped = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      import("node:http").then(({ get }) =>
        get(`${server.baseUrl}/docs/swagger-ui-bundle.js`, { headers: { "accept-encoding": "gzip" } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ encoding: res.headers["content-encoding"], body: Buffer.concat(chunks) }));
          res.on("error", reject);
        }).on("error", reject),
      );
    });
    expect(zipped.encoding).toBe("gzip");
    expect(zipped.body.length).toBeLessThan(bundle.length / 2);
    expect(gunzipSync(zipped.body).equals(bundle)).toBe(true);

    const etag = plain.headers.get("etag") ?? "";
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    const again = await fetch(`${server.baseUrl}/docs/swagger-ui-bundle.js`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });

  it("answers HEAD without a body, and leaves other methods and unknown files to the 404", async () => {
    const head = await fetch(`${server.baseUrl}/docs`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await head.text()).toBe("");
    for (const [method, path] of [
      ["POST", "/docs"],
      ["GET", "/docs/index.html"],
      ["GET", "/docs/swagger-ui-bundle.js.map"],
      ["GET", "/docs/../package.json"],
    ] as const) {
      const response = await fetch(`${server.baseUrl}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(404);
    }
  });
});

const chromiumMissing = existsSync(CHROMIUM)
  ? undefined
  : `SKIPPED: no Chromium at ${CHROMIUM}; install it with: apt-get update && apt-get install -y chromium`;

if (chromiumMissing !== undefined) {
  describe("the page in Chromium", () => {
    it.skip(chromiumMissing, () => undefined);
  });
}

describe.skipIf(chromiumMissing !== undefined)("the page in Chromium", () => {
  it("shows the operation and a try-it call with a demo key returns 200 and renders the entries", async () => {
    const userDataDir = mkdtempSync(join(tmpdir(), "topwagers-chromium-"));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      env: CHROMIUM_ENV,
      viewport: { width: 1280, height: 1000 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const requested: string[] = [];
      const problems: string[] = [];
      page.on("request", (request) => requested.push(request.url()));
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(`console: ${message.text()}`);
      });

      await page.goto(`${server.baseUrl}/docs`, { waitUntil: "load" });
      const operation = page.locator("#operations-leaderboard-getTopAffiliateWagersByPeriod");
      await operation.waitFor({ state: "visible", timeout: 15_000 });
      expect(await operation.locator(".opblock-summary-method").textContent()).toBe("POST");
      expect(await operation.locator(".opblock-summary-path").getAttribute("data-path")).toBe(
        "/top-affiliate-wagers-by-period",
      );
      expect(await page.locator(".info .title").textContent()).toContain("topwagers");

      // Authorize with the demo key (the bearer scheme of the document).
      await page.locator(".auth-wrapper button.authorize").click();
      await page.locator(".modal-ux input[type=text]").fill(demoKey);
      await page.locator(".modal-ux button.modal-btn.auth.authorize").click();
      await page.locator(".modal-ux button.btn-done").click();

      // Open the operation; try-it mode is on and the body holds the first example, the half-month.
      await operation.locator(".opblock-summary-control").click();
      const body = operation.locator("textarea.body-param__text");
      await body.waitFor({ state: "visible" });
      expect(JSON.parse(await body.inputValue())).toEqual({
        startTimestamp: 1794787200,
        endTimestamp: 1796083199,
        numUsers: 10,
      });
      await operation.locator("button.execute").click();

      const live = operation.locator(".live-responses-table");
      await live.waitFor({ state: "visible", timeout: 15_000 });
      expect((await live.locator("tbody tr.response .response-col_status").textContent())?.trim()).toBe("200");
      const shown = await live.locator("div:has(> h5:text-is('Response body')) pre.microlight").textContent();
      expect(JSON.parse(shown ?? "")).toEqual(EXPECTED);
      for (const entry of EXPECTED.data) await expect.poll(() => live.textContent()).toContain(entry.username);
      const curl = await operation.locator(".curl-command").textContent();
      expect(curl).toContain(`${server.baseUrl}/top-affiliate-wagers-by-period`);
      expect(curl).toContain(`Authorization: Bearer ${demoKey}`);

      // The artefacts: the try-it request and its rendered answer, and the top of the page.
      mkdirSync(new URL(".", SCREENSHOT), { recursive: true });
      await page.evaluate("document.querySelector('textarea.body-param__text').scrollIntoView({ block: 'start' })");
      await page.screenshot({ path: SCREENSHOT.pathname });
      await page.evaluate("window.scrollTo(0, 0)");
      await page.screenshot({ path: SCREENSHOT_TOP.pathname });

      expect(problems).toEqual([]);
      const offsite = requested.filter((url) => !url.startsWith(`${server.baseUrl}/`) && !url.startsWith("data:"));
      expect(offsite).toEqual([]);
      expect(requested).toContain(`${server.baseUrl}/top-affiliate-wagers-by-period`);
      expect(requested).toContain(`${server.baseUrl}/openapi.json`);
    } finally {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
