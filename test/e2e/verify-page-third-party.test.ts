/**
 * The verify page hosted by a third party (issue 46 part 3), in Chromium: a real server process (the operator,
 * signing results and its log's checkpoints), a static host on another origin serving the page's one file as
 * `GET /verify` gives it, with the Content-Security-Policy header docs/verify.md ("Hosting the page yourself") tells
 * a host to send (connect-src narrowed to the operators it checks), and a proxy on a third origin that answers what
 * the operator answers but can change the signed result's answer. With the log's verifier key pinned in the link:
 * green for a real result, through the operator directly and through the unchanging proxy; red, naming the reason
 * and showing nothing of the payload, for a tampered result, a tampered proof (one hash byte), a tampered checkpoint
 * (one byte) and a checkpoint signed by another key under the log's name. The host's copy with the operator and key
 * pinned in its meta tags is green by race id alone and refuses another operator; unpinned, it shows the fingerprint
 * of the key it fetched; an operator outside the host's connect-src cannot be read. Screenshots of each state at
 * 390×844 and 1280×900 go to test-artifacts/verify-third-party/.
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signNote } from "../../src/results-log/core/signed-note.js";
import { CHROMIUM, CHROMIUM_ARGS, CHROMIUM_ENV } from "../support/browser.js";
import { useTestDatabase } from "../support/database.js";
import { docSection, fencedBlocks } from "../support/doc-blocks.js";
import { listenOnFreePort } from "../support/listen.js";
import { until } from "../support/polling.js";
import { type ServerProcess, startServerProcess } from "../support/processes.js";
import { tampered } from "../support/signed-kinds.js";
import { activeSigningKey, signedRace } from "../support/signed-races.js";

const ISSUER = "https://casino.example";
const ORIGIN = "casino.example/topwagers";
const SCREENS = join("test-artifacts", "verify-third-party");
const VIEWPORTS = [
  { width: 390, height: 844 },
  { width: 1280, height: 900 },
];
const database = useTestDatabase("verify_third_party");
let operator: ServerProcess | undefined;
let browser: Browser | undefined;
let host: Server;
let proxy: Server;
let hostUrl = "";
let proxyUrl = "";
let raceId = "";
let kid = "";
let vkey = "";
/** The page's file as the operator serves it at /verify. */
let file = "";

interface SignedAnswer {
  jws: string;
  kid: string;
  sha256: string;
  log: { index: number; entry: string; checkpoint: string; proof: string[] };
}
/** How the proxy changes the signed result's answer. */
let change: (answer: SignedAnswer) => SignedAnswer = (answer) => answer;

const chromiumMissing = existsSync(CHROMIUM) ? undefined : `SKIPPED: no Chromium at ${CHROMIUM}`;

/** docs/verify.md's header for a host, with the file's hashes and `origins` for the operator's. */
function documentedPolicy(origins: string): string {
  const nginx = fencedBlocks(docSection(readFileSync("docs/verify.md", "utf8"), "Hosting the page yourself"), "nginx");
  const policy = /"([^"]+)"/.exec(nginx[0] ?? "")?.[1] ?? "";
  const [script, style] = [...file.matchAll(/'(sha256-[A-Za-z0-9+/]+=*)'/g)].map((m) => m[1]);
  return policy
    .replace("sha256-…", script ?? "")
    .replace("sha256-…", style ?? "")
    .replace("https://casino.example", origins);
}

/** The third party's static host: the file as /verify.html, and a copy pinning the operator and its log's key. */
function staticHost(operatorUrl: string): Server {
  const policy = documentedPolicy(`${operatorUrl} ${proxyUrl}`);
  return createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const pinned = file
      .replace(
        '<meta name="topwagers-operator" content="">',
        `<meta name="topwagers-operator" content="${operatorUrl}">`,
      )
      .replace('<meta name="topwagers-log-key" content="">', `<meta name="topwagers-log-key" content="${vkey}">`);
    const body = path === "/verify.html" ? file : path === "/pinned.html" ? pinned : undefined;
    if (body === undefined) return void res.writeHead(404).end();
    res
      .writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": policy,
      })
      .end(body);
  });
}

/** Answers what the operator answers (its headers kept), the signed result's answer passed through `change`. */
function changingProxy(operatorUrl: string): Server {
  return createServer(async (req, res) => {
    const answer = await fetch(`${operatorUrl}${req.url}`);
    const headers: Record<string, string> = {};
    for (const name of ["content-type", "access-control-allow-origin", "cache-control"]) {
      const value = answer.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    let body = Buffer.from(await answer.arrayBuffer());
    if (answer.ok && /^\/verify\/race_[a-z2-7]{20}\/signed$/.test(req.url ?? "")) {
      body = Buffer.from(JSON.stringify(change(JSON.parse(body.toString("utf8")) as SignedAnswer)));
    }
    res.writeHead(answer.status, headers).end(body);
  });
}

beforeAll(async () => {
  operator = await startServerProcess({ DATABASE_URL: database.url, ISSUER });
  kid = (await activeSigningKey(database.db)).kid;
  // Three other affiliates' results first: ours is entry #4 of the first checkpoint holding it, its proof 2 hashes.
  for (const other of ["aff-a", "aff-b", "aff-c"]) await signedRace(database.db, other, ISSUER);
  raceId = await signedRace(database.db, "fans-aff", ISSUER);
  // The operator's sequencer signs a checkpoint holding the result within two seconds.
  await until(
    "the result in a checkpoint",
    async () => (await (await fetch(`${operator?.baseUrl}/verify/${raceId}/signed`)).json()) as SignedAnswer,
    (answer) => answer.log?.checkpoint !== null,
    10_000,
  );
  vkey = (await (await fetch(`${operator.baseUrl}/log/vkey`)).text()).trim();
  file = await (await fetch(`${operator.baseUrl}/verify`)).text();
  proxy = changingProxy(operator.baseUrl);
  proxyUrl = `http://127.0.0.1:${await listenOnFreePort(proxy)}`;
  host = staticHost(operator.baseUrl);
  hostUrl = `http://127.0.0.1:${await listenOnFreePort(host)}`;
  if (chromiumMissing === undefined) {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, env: CHROMIUM_ENV });
  }
  mkdirSync(SCREENS, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  for (const server of [proxy, host]) if (server !== undefined) await new Promise((resolve) => server.close(resolve));
  await operator?.stop();
});

/** What the page says once it has checked, what it shows of the payload, and its "Checked against" list. */
interface Verdict {
  state: string | null;
  says: string;
  shown: number;
  checks: Record<string, string>;
  /** The note beside the verdict when the log's key was not pinned, if shown, and whether it is in the first screen. */
  pin: string | null;
  pinInView: boolean;
}

/** Opens `path` on the host at each viewport; the verdict (the same at both), screenshots as `name`-<w>x<h>.png. */
async function verdict(path: string, name: string): Promise<Verdict> {
  const seen: Verdict[] = [];
  for (const viewport of VIEWPORTS) {
    const page = await (browser as Browser).newPage({ viewport });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    try {
      await page.goto(`${hostUrl}${path}`, { waitUntil: "load" });
      const status = page.locator("#status:not([data-state=checking])");
      await status.waitFor({ timeout: 15_000 });
      await page.screenshot({ path: join(SCREENS, `${name}-${viewport.width}x${viewport.height}.png`) });
      expect(problems).toEqual([]);
      const pin = page.locator("#pin");
      const pinShown = await pin.isVisible();
      const pinBox = pinShown ? await pin.boundingBox() : null;
      seen.push({
        pin: pinShown ? await pin.textContent() : null,
        pinInView: pinBox !== null && pinBox.y + pinBox.height <= viewport.height,
        state: await status.getAttribute("data-state"),
        says: (await status.textContent()) ?? "",
        shown: await page.evaluate(
          `[...document.querySelectorAll("#standings tbody tr, #prizes tbody tr, #facts dt")].filter((e) => e.checkVisibility()).length`,
        ),
        checks: Object.fromEntries(
          await page.$$eval("#checks dt", (terms) =>
            // The proof's time differs from run to run: its shape is checked.
            terms.map((dt) => [
              dt.textContent ?? "",
              (dt.nextElementSibling?.textContent ?? "").replace(/checked in \d+\.\d ms$/, "checked in N ms"),
            ]),
          ),
        ),
      });
    } finally {
      await page.close();
    }
  }
  expect(seen[1]).toEqual(seen[0]);
  return seen[0] as Verdict;
}

const link = (base: string, key = vkey) =>
  `/verify.html?${new URLSearchParams({ base, race: raceId, ...(key === "" ? {} : { vkey: key }) })}`;
const VALID = () => `Valid: result #4 of 4 in ${ORIGIN}'s log, signed by ${ISSUER} with key ${kid}.`;
/** Two standings rows, two prize rows and ten facts. */
const ALL_SHOWN = 14;
const fingerprint = () =>
  createHash("sha256")
    .update(vkey)
    .digest("hex")
    .slice(0, 32)
    .replace(/(.{4})(?!$)/g, "$1 ");

/** A base64 hash with its first byte changed. */
function flipped(hash: string): string {
  const bytes = Buffer.from(hash, "base64");
  bytes[0] = (bytes[0] ?? 0) ^ 0x01;
  return bytes.toString("base64");
}

describe("the verify page on a third party's origin", () => {
  it.skipIf(chromiumMissing !== undefined)(
    "turns green for a real result, the log's key pinned in the link",
    async () => {
      change = (answer) => answer;
      const direct = await verdict(link(operator?.baseUrl ?? ""), "valid");
      expect([direct.state, direct.says, direct.shown, direct.pin]).toEqual(["valid", VALID(), ALL_SHOWN, null]);
      expect(direct.checks).toEqual({
        Operator: operator?.baseUrl,
        "Log key": vkey,
        "Its fingerprint": `${fingerprint()} (pinned by the link)`,
        "Inclusion proof": "2 hashes to the root of the checkpoint of 4, checked in N ms",
      });
      const proxied = await verdict(link(proxyUrl), "valid-through-proxy");
      expect([proxied.state, proxied.says, proxied.shown]).toEqual(["valid", VALID(), ALL_SHOWN]);
    },
  );

  /** What the proxy changes, and what the page says then. */
  const TAMPERED: readonly { what: string; name: string; change: typeof change; says: () => string }[] = [
    {
      what: "a tampered result (a name in its payload changed, signature kept)",
      name: "tampered-result",
      change: (answer) => ({ ...answer, jws: tampered(answer.jws) }),
      says: () => "Signature invalid: the result was changed after it was signed.",
    },
    {
      what: "a tampered proof (one hash byte)",
      name: "tampered-proof",
      change: (answer) => {
        const [first, ...rest] = answer.log.proof;
        return { ...answer, log: { ...answer.log, proof: [flipped(first ?? ""), ...rest] } };
      },
      says: () =>
        "Log check failed: the inclusion proof does not lead to the checkpoint's root (entry #4 is not in the tree it signs).",
    },
    {
      what: "a tampered checkpoint (one byte of its root)",
      name: "tampered-checkpoint",
      change: (answer) => {
        const [origin, size, root, ...rest] = answer.log.checkpoint.split("\n");
        return {
          ...answer,
          log: { ...answer.log, checkpoint: [origin, size, flipped(root ?? ""), ...rest].join("\n") },
        };
      },
      says: () =>
        `Log check failed: the checkpoint does not verify with the log's key ${vkey.split("+").slice(0, 2).join("+")} (it was changed after it was signed).`,
    },
    {
      what: "a checkpoint signed by another key under the log's name",
      name: "checkpoint-other-key",
      change: (answer) => {
        const text = answer.log.checkpoint.slice(0, answer.log.checkpoint.lastIndexOf("\n\n") + 1);
        const { privateKey, publicKey } = generateKeyPairSync("ed25519");
        const raw = publicKey.export({ format: "jwk" }).x ?? "";
        const key = { name: ORIGIN, publicKey: new Uint8Array(Buffer.from(raw, "base64url")) };
        return { ...answer, log: { ...answer.log, checkpoint: signNote(text, key, privateKey) } };
      },
      says: () =>
        `Log check failed: the checkpoint is not signed by the log's key ${vkey.split("+").slice(0, 2).join("+")}.`,
    },
  ];

  for (const tamper of TAMPERED) {
    it.skipIf(chromiumMissing !== undefined)(`turns red for ${tamper.what}, showing nothing of it`, async () => {
      change = tamper.change;
      const seen = await verdict(link(proxyUrl), tamper.name);
      expect([seen.state, seen.says, seen.shown]).toEqual(["invalid", tamper.says(), 0]);
    });
  }

  it.skipIf(chromiumMissing !== undefined)(
    "pinned in the host's copy: green by race id alone, refusing another operator",
    async () => {
      change = (answer) => answer;
      const pinned = await verdict(`/pinned.html?race=${raceId}`, "pinned-valid");
      expect([pinned.state, pinned.says, pinned.checks["Its fingerprint"], pinned.pin]).toEqual([
        "valid",
        VALID(),
        `${fingerprint()} (pinned by this page)`,
        null,
      ]);
      const other = await verdict(`/pinned.html?base=${encodeURIComponent(proxyUrl)}&race=${raceId}`, "pinned-other");
      expect([other.state, other.says, other.shown]).toEqual([
        "invalid",
        `Not checked: this page checks ${operator?.baseUrl}'s results only, not ${proxyUrl}'s.`,
        0,
      ]);
    },
  );

  it.skipIf(chromiumMissing !== undefined)(
    "unpinned, shows the fingerprint of the key it fetched; an operator outside the host's connect-src is not read",
    async () => {
      change = (answer) => answer;
      const unpinned = await verdict(link(operator?.baseUrl ?? "", ""), "unpinned");
      expect([unpinned.state, unpinned.says, unpinned.checks["Its fingerprint"]]).toEqual([
        "valid",
        VALID(),
        `${fingerprint()} (from the operator, not pinned: compare it with one published elsewhere)`,
      ]);
      // Said beside the verdict too, in the first screen at both sizes: the fingerprint list is under the standings.
      expect([unpinned.pin, unpinned.pinInView]).toEqual([
        `The log's key came from the operator being checked (fingerprint ${fingerprint()}): compare it with one ` +
          "published elsewhere, or use a link or copy of this page that pins it.",
        true,
      ]);
      const elsewhere = (operator?.baseUrl ?? "").replace("127.0.0.1", "localhost");
      const blocked = await verdict(link(elsewhere), "outside-connect-src");
      expect([blocked.state, blocked.shown]).toEqual(["invalid", 0]);
      expect(blocked.says).toMatch(
        /^Could not check: http:\/\/localhost:\d+\/(verify\/race_[a-z2-7]{20}\/signed|\.well-known\/jwks(-live)?\.json) could not be read \(the network, the operator's CORS, or this page's connect-src\)$/,
      );
    },
  );
});
