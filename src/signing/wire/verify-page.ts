/**
 * The verify page (docs/verify.md), open to anyone, no key:
 * - `GET /verify` and `GET /verify/{raceId}`: the page, one static file (./parts/verify-page-assets.ts) that checks in
 *   the browser (WebCrypto) the signed result's JWS against the JWK Sets, the log's checkpoint against the log's
 *   verifier key, and the result's inclusion proof, then shows the payload; on `/verify/{raceId}` it checks that race
 *   on this server, on `/verify` it asks which (the same file a third party hosts, `?base=…&race=…`);
 * - `GET /verify/{raceId}/signed`: the signed result itself, `{"jws","kid","sha256","log"}` (404 until there is
 *   one), `log` its place in the results log with the inclusion proof (docs/verify.md, "The results log");
 * - `GET /v/{id}`: the short link an overlay shows (the race id without "race_"), a redirect to the page.
 * Every answer is open to pages of any origin (`Access-Control-Allow-Origin: *`, a 404 too), so a page hosted
 * elsewhere can read it. The race id is 100 random bits, so the page is a link to share, not a list to browse.
 */
import { type NodeRequest, type NodeResponse, writeWhole } from "../../platform/transport/http.js";
import type { SignedResult } from "../../ports/races.js";
import type { LogInclusion } from "../../ports/results-log.js";
import { isRaceId } from "../../races/core/race-id.js";
import { VERIFY_CONTENT_SECURITY_POLICY, VERIFY_PAGE_HTML } from "./parts/verify-page-assets.js";

export const VERIFY_PATH = "/verify";
export const SHORT_VERIFY_PATH = "/v";

export { VERIFY_CONTENT_SECURITY_POLICY } from "./parts/verify-page-assets.js";

export class VerifyPage {
  constructor(
    private readonly signedResult: (raceId: string) => Promise<SignedResult | undefined>,
    /** The race's place in the results log (docs/verify.md); absent: `log` is null. */
    private readonly inclusion: (raceId: string) => Promise<LogInclusion | undefined> = async () => undefined,
  ) {}

  matches(path: string): boolean {
    return path === VERIFY_PATH || path.startsWith(`${VERIFY_PATH}/`) || path.startsWith(`${SHORT_VERIFY_PATH}/`);
  }

  /** The path family's template, for traces. */
  route(path: string): string {
    if (path.startsWith(`${SHORT_VERIFY_PATH}/`)) return `${SHORT_VERIFY_PATH}/{id}`;
    if (path === VERIFY_PATH) return VERIFY_PATH;
    return path.endsWith("/signed") ? `${VERIFY_PATH}/{raceId}/signed` : `${VERIFY_PATH}/{raceId}`;
  }

  async handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void> {
    if (path === VERIFY_PATH) return page(req, res);
    const [, first, id, rest, ...more] = path.split("/");
    const raceId = first === "v" ? `race_${id ?? ""}` : (id ?? "");
    if (!isRaceId(raceId) || more.length > 0 || (first === "v" && rest !== undefined)) return notFound(res);
    if (first === "v") {
      writeWhole(res, 302, { location: `${VERIFY_PATH}/${raceId}`, "content-length": "0" }, "");
      return;
    }
    if (rest === undefined) return page(req, res);
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

/** The page: the same bytes at every address (the race is read from the address by its script). */
function page(req: NodeRequest, res: NodeResponse): void {
  const headers = {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "public, max-age=300",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "content-security-policy": VERIFY_CONTENT_SECURITY_POLICY,
    "content-length": String(Buffer.byteLength(VERIFY_PAGE_HTML)),
  };
  writeWhole(res, 200, headers, req.method === "HEAD" ? "" : VERIFY_PAGE_HTML);
}

/** A 404 in the REST envelope, readable by a page of any origin (it says "no signed result yet"). */
function notFound(res: NodeResponse): void {
  const body = JSON.stringify({
    data: null,
    errors: [{ code: "not_found", message: "no signed result at this address" }],
  });
  writeWhole(
    res,
    404,
    {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      "access-control-allow-origin": "*",
      "content-length": String(Buffer.byteLength(body)),
    },
    body,
  );
}
