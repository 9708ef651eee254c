/**
 * The verify page as ONE static file (docs/verify.md, "The verify page"): the operator serves it at `/verify` and
 * `/verify/{raceId}`, and a third party (a fan site, a watchdog) hosts the same bytes anywhere, checking any
 * operator's results cross-origin. Its script (./verify-page-script.ts) and style (./verify-page-style.ts) are
 * inline, allowed by their hashes: by the file's own `<meta>` Content-Security-Policy wherever it is hosted (no
 * other script or style runs; it may fetch from any origin, as the page it is does), and by the operator's header
 * policy, which also keeps its fetches to the operator's own origin. A host narrows `connect-src` to the operators
 * it checks with a header of its own (or in the meta); it may pin the operator and the log's verifier key in the
 * file's two empty `<meta>` tags, which changes no hash.
 */
import { createHash } from "node:crypto";
import { VERIFY_SCRIPT } from "./verify-page-script.js";
import { VERIFY_STYLE } from "./verify-page-style.js";

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

export const VERIFY_SCRIPT_HASH = hashOf(VERIFY_SCRIPT);
export const VERIFY_STYLE_HASH = hashOf(VERIFY_STYLE);

/** The policy every copy of the file carries: only its own script and style; fetches from any origin. */
export const STANDALONE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${VERIFY_SCRIPT_HASH}`,
  `style-src ${VERIFY_STYLE_HASH}`,
  "connect-src *",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/** The policy the operator's server sends with it: the same, and fetches from its own origin only. */
export const VERIFY_CONTENT_SECURITY_POLICY = STANDALONE_CONTENT_SECURITY_POLICY.replace(
  "connect-src *",
  "connect-src 'self'",
);

const FORM =
  `<form id="ask"><label for="base">Operator</label><input id="base" type="url" placeholder="https://casino.example" ` +
  `autocomplete="off"><label for="race">Race id</label><input id="race" placeholder="race_…" autocomplete="off" ` +
  `spellcheck="false"><label for="vkey">Log key</label><input id="vkey" placeholder="optional: the log's verifier ` +
  `key you keep (name+id+key)" autocomplete="off" spellcheck="false"><button>Check</button></form>`;

const RESULT =
  `<section id="result" hidden><dl id="facts"></dl><h2>Standings</h2><table id="standings"><caption id="seal">` +
  `</caption><thead><tr><th class="n">Rank</th><th>User</th><th class="n">Wagered</th><th class="n">Prize</th></tr></thead><tbody></tbody>` +
  `</table><h2>Prize table</h2><table id="prizes"><thead><tr><th>Place</th><th class="n">Prize</th><th>Won by</th></tr>` +
  `</thead><tbody></tbody></table><p id="unallocated" class="note"></p><h2>Changes to the race</h2>` +
  `<table id="history"><thead><tr><th>When</th><th>Change</th><th>By</th><th>What changed</th></tr></thead>` +
  `<tbody></tbody></table><div id="notes"></div></section>`;

/** The file, byte for byte the same wherever it is served. */
export const VERIFY_PAGE_HTML =
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n` +
  `<meta http-equiv="Content-Security-Policy" content="${STANDALONE_CONTENT_SECURITY_POLICY}">\n` +
  `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">\n` +
  `<!-- A host that checks one operator's results may pin it and its log's verifier key (GET /log/vkey) here. -->\n` +
  `<meta name="topwagers-operator" content="">\n<meta name="topwagers-log-key" content="">\n` +
  `<title>Race result check</title><style>${VERIFY_STYLE}</style></head><body>\n` +
  `<h1>Race result check</h1><p id="status" role="status" data-state="checking">Checking…</p>\n` +
  `<p id="pin" class="note" hidden></p>\n` +
  `${RESULT}\n<h2>Checked against</h2><dl id="checks"></dl>\n${FORM}\n` +
  `<p class="note">The signature, the log's checkpoint and the result's place in the log are checked in this ` +
  `browser (WebCrypto), against the operator's published keys; the standings show only when every check passes.</p>\n` +
  `<script>${VERIFY_SCRIPT}</script></body></html>\n`;
