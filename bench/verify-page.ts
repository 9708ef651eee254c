/**
 * `npm run bench -- verify-page`: how long the verify page takes, in Chromium, to check a result's place in a log of
 * 1,000,000 entries (issue 46's target: an inclusion proof checks in the page in 50 ms or less). A synthetic log: the
 * tree's complete subtrees that do not hold the result are hashes made up from their place, the ones on the result's
 * path are computed from their children, so the root and the proof (src/results-log/core/merkle.ts, as the server
 * makes them: 20 hashes) agree. An operator stand-in serves a real signed result (a key made here, the payload a
 * freeze signs), its entry, a checkpoint of the synthetic tree signed with a log key made here, and the JWK Sets; the
 * page's one file is served from a second origin and opened with the log's key pinned in the link, `--runs` times
 * in one browser. The page measures itself (performance.now): the proof alone (the leaf hash and 20 node hashes with
 * crypto.subtle), and the whole log check (the checkpoint's Ed25519 signature, the entry, the proof).
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { checkpointText } from "../src/results-log/core/checkpoint.js";
import { entryText } from "../src/results-log/core/log-entry.js";
import { type Hash, inclusionProof, leafHash, nodeHash, rangeHash } from "../src/results-log/core/merkle.js";
import { makeLogKey, privateKeyOf } from "../src/results-log/core/sequencer.js";
import { signNote, verifierKey } from "../src/results-log/core/signed-note.js";
import { jwkSet, makeSigningKey } from "../src/signing/core/keys.js";
import { Signer } from "../src/signing/core/signer.js";
import { VERIFY_PAGE_HTML } from "../src/signing/wire/parts/verify-page-assets.js";
import { fmt, percentile, table } from "./support.js";

const ORIGIN = "casino.example/topwagers";
const RACE_ID = "race_benchbenchbenchbench";

/** A synthetic tree of `size` leaves whose leaf `index` is `leaf`: each complete subtree's hash. */
function syntheticTree(index: number, leaf: Hash): (level: number, at: number) => Hash {
  const read = (level: number, at: number): Hash => {
    const holds = at === Math.floor(index / 2 ** level);
    if (level === 0) return holds ? leaf : new Uint8Array(createHash("sha256").update(`leaf ${at}`).digest());
    if (!holds) return new Uint8Array(createHash("sha256").update(`subtree ${level} ${at}`).digest());
    return nodeHash(read(level - 1, 2 * at), read(level - 1, 2 * at + 1));
  };
  return read;
}

/** A final result as a freeze signs it: ten placed users, five prizes, no change after creation. */
function resultPayload(frozenAt: number): Record<string, unknown> {
  return {
    type: "topwagers.race-result.v1",
    affiliateId: "bench-aff",
    raceId: RACE_ID,
    state: "final",
    slug: "monthly",
    title: "$1,000 monthly race",
    period: { startsAt: frozenAt - 2_678_400, endsAt: frozenAt - 3_601 },
    timeZone: "UTC",
    rankBy: "wagered",
    currency: "USD",
    prizes: ["500.00", "250.00", "125.00", "75.00", "50.00"],
    minWagered: "0",
    entries: Array.from({ length: 10 }, (_, i) => ({
      rank: i + 1,
      userId: `user-${i}`,
      username: `player_${i}`,
      totalWageredDecimal: `${100_000 - i * 1_000}.25`,
      weightedWageredDecimal: `${100_000 - i * 1_000}.25`,
      prize: ["500.00", "250.00", "125.00", "75.00", "50.00"][i] ?? "0.00",
    })),
    unallocated: "0.00",
    frozenAt,
    digest: "ab".repeat(32),
    chain: { sequence: 7, previous: { raceId: "race_aaaaaaaaaaaaaaaaaaaa", sha256: "cd".repeat(32) } },
    historySummary: { changes: 0, entries: [], standings: { voidedWagers: 0, usersAffected: 0, ranksMoved: [] } },
  };
}

/** The operator stand-in: the keys, the signed result with its place in the synthetic log, the log's key. */
async function operatorFiles(size: number, index: number) {
  const key = await makeSigningKey();
  const signer = new Signer({ active: async () => key }, { issuer: "https://casino.example" });
  const payload = resultPayload(1_795_756_324);
  const jws = (await signer.sign(payload))?.jws ?? "";
  const sha256 = createHash("sha256").update(jws, "ascii").digest("hex");
  const entry = entryText({
    kind: "final",
    affiliateId: "bench-aff",
    raceId: RACE_ID,
    at: 1_795_756_324,
    digest: "ab".repeat(32),
    sha256,
  });
  const read = syntheticTree(index, leafHash(new TextEncoder().encode(entry)));
  const root = rangeHash(0, size, read);
  const proof = inclusionProof(size, index, read);
  const logKey = makeLogKey(ORIGIN);
  const noteKey = { name: ORIGIN, publicKey: logKey.publicKey };
  const checkpoint = signNote(checkpointText({ origin: ORIGIN, size, root }), noteKey, privateKeyOf(logKey));
  const published = { kid: key.kid, x: key.x, state: "active" as const, createdAt: 0, activatedAt: 0, retiredAt: null };
  const files: Record<string, string> = {
    "/.well-known/jwks.json": JSON.stringify(jwkSet([published])),
    "/.well-known/jwks-live.json": JSON.stringify({ keys: [] }),
    [`/verify/${RACE_ID}/signed`]: JSON.stringify({
      jws,
      kid: key.kid,
      sha256,
      log: { index, entry, checkpoint, proof: proof.map((h) => Buffer.from(h).toString("base64")) },
    }),
    "/log/vkey": `${verifierKey(noteKey)}\n`,
  };
  return { files, vkey: verifierKey(noteKey), hashes: proof.length };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function runVerifyPageBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      entries: { type: "string", default: "1000000" },
      index: { type: "string", default: "500000" },
      runs: { type: "string", default: "30" },
      chromium: { type: "string", default: "/usr/bin/chromium" },
    },
  });
  const [size, index, runs] = [Number(values.entries), Number(values.index), Number(values.runs)];
  const { files, vkey, hashes } = await operatorFiles(size, index);
  const operator = createServer((req, res) => {
    const body = files[req.url ?? ""];
    res.writeHead(body === undefined ? 404 : 200, { "access-control-allow-origin": "*" }).end(body ?? "");
  });
  const host = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(VERIFY_PAGE_HTML));
  const [operatorUrl, hostUrl] = [await listen(operator), await listen(host)];
  const browser = await chromium.launch({ executablePath: values.chromium, args: ["--headless", "--no-sandbox"] });
  const version = browser.version();
  const proofs: number[] = [];
  const logs: number[] = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const link = `${hostUrl}/verify.html?${new URLSearchParams({ base: operatorUrl, race: RACE_ID, vkey })}`;
    for (let run = 0; run < runs; run++) {
      await page.goto(link);
      await page.locator("#status[data-state=valid]").waitFor({ timeout: 15_000 });
      proofs.push(Number(await page.evaluate("document.body.dataset.proofMs")));
      logs.push(Number(await page.evaluate("document.body.dataset.logMs")));
    }
  } finally {
    await browser.close();
    operator.close();
    host.close();
  }
  const row = (what: string, ms: number[]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    return [what, fmt(percentile(sorted, 50)), fmt(percentile(sorted, 95)), fmt(sorted.at(-1) ?? Number.NaN)];
  };
  process.stdout.write(
    `verify-page: a log of ${size.toLocaleString("en")} entries, result #${index + 1}, a proof of ${hashes} hashes; ` +
      `Chromium ${version}, ${runs} page loads (target: the proof in 50 ms or less)\n\n` +
      `${table(["check in the page", "p50 ms", "p95 ms", "max ms"], [row(`inclusion proof (leaf + ${hashes} nodes, SHA-256)`, proofs), row("log check (checkpoint signature, entry, proof)", logs)])}\n`,
  );
}
