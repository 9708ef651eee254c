/**
 * The verify page (docs/verify.md), open to anyone who has the race's id, no key:
 * - `GET /verify/{raceId}`: a page that fetches the signed result and the JWK Set and checks the signature in the
 *   browser (WebCrypto Ed25519), then shows the issuer, the key id, the chain link, the standings and the history;
 * - `GET /verify/{raceId}/signed`: the signed result itself, `{"jws","kid","sha256","log"}` (404 until there is
 *   one), `log` its place in the results log with the inclusion proof (docs/verify.md, "The results log");
 * - `GET /v/{id}`: the short link an overlay shows (the race id without "race_"), a redirect to the page.
 * The race id is 100 random bits, so the page is a link to share, not a list to browse.
 */
import { createHash } from "node:crypto";
import { type NodeRequest, type NodeResponse, writeJson, writeWhole } from "../../platform/transport/http.js";
import type { SignedResult } from "../../ports/races.js";
import type { LogInclusion } from "../../ports/results-log.js";
import { isRaceId } from "../../races/core/race-id.js";
import { VERIFY_SCRIPT, VERIFY_STYLE } from "./parts/verify-page-assets.js";

export const VERIFY_PATH = "/verify";
export const SHORT_VERIFY_PATH = "/v";

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/** Only the page's own script and style (by hash), and fetches from its own origin. */
export const VERIFY_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${hashOf(VERIFY_SCRIPT)}`,
  `style-src ${hashOf(VERIFY_STYLE)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

export class VerifyPage {
  constructor(
    private readonly signedResult: (raceId: string) => Promise<SignedResult | undefined>,
    /** The race's place in the results log (docs/verify.md); absent: `log` is null. */
    private readonly inclusion: (raceId: string) => Promise<LogInclusion | undefined> = async () => undefined,
  ) {}

  matches(path: string): boolean {
    return path.startsWith(`${VERIFY_PATH}/`) || path.startsWith(`${SHORT_VERIFY_PATH}/`);
  }

  /** The path family's template, for traces. */
  route(path: string): string {
    if (path.startsWith(`${SHORT_VERIFY_PATH}/`)) return `${SHORT_VERIFY_PATH}/{id}`;
    return path.endsWith("/signed") ? `${VERIFY_PATH}/{raceId}/signed` : `${VERIFY_PATH}/{raceId}`;
  }

  async handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void> {
    const [, first, id, rest, ...more] = path.split("/");
    const raceId = first === "v" ? `race_${id ?? ""}` : (id ?? "");
    if (!isRaceId(raceId) || more.length > 0 || (first === "v" && rest !== undefined)) return notFound(res);
    if (first === "v") {
      writeWhole(res, 302, { location: `${VERIFY_PATH}/${raceId}`, "content-length": "0" }, "");
      return;
    }
    if (rest === undefined) return page(req, res, raceId);
    if (rest !== "signed") return notFound(res);
    const [signed, log] = await Promise.all([this.signedResult(raceId), this.inclusion(raceId)]);
    if (signed === undefined) return notFound(res);
    const logged =
      log === undefined ? null : { index: log.index, entry: log.entry, checkpoint: log.checkpoint, proof: log.proof };
    const body = JSON.stringify({ jws: signed.jws, kid: signed.kid, sha256: signed.sha256, log: logged });
    const headers = {
      "content-type": "application/json; charset=utf-8",
      // The same bytes forever once signed and in a checkpoint (a result's first seconds: its proof is on its way).
      "cache-control": logged?.checkpoint === null ? "public, max-age=1" : "public, max-age=31536000, immutable",
      "access-control-allow-origin": "*",
      "content-length": String(Buffer.byteLength(body)),
    };
    writeWhole(res, 200, headers, req.method === "HEAD" ? "" : body);
  }
}

function page(req: NodeRequest, res: NodeResponse, raceId: string): void {
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<title>Verify ${raceId}</title><style>${VERIFY_STYLE}</style></head><body data-race="${raceId}">` +
    `<h1>Race result check</h1><p id="status" data-state="checking">Checking the signature…</p>` +
    `<dl id="facts"></dl><h2>Standings</h2><table id="standings"><tr><th>Rank</th><th>User</th><th>Wagered</th>` +
    `<th>Prize</th></tr></table><h2>History</h2><table id="history"><tr><th>When</th><th>Change</th><th>By</th>` +
    `<th>Fields</th></tr></table><p id="voids"></p><script>${VERIFY_SCRIPT}</script></body></html>`;
  const headers = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "public, max-age=300",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "content-security-policy": VERIFY_CONTENT_SECURITY_POLICY,
    "content-length": String(Buffer.byteLength(html)),
  };
  writeWhole(res, 200, headers, req.method === "HEAD" ? "" : html);
}

function notFound(res: NodeResponse): void {
  writeJson(res, 404, { data: null, errors: [{ code: "not_found", message: "no signed result at this address" }] });
}
