/**
 * The verify page's script and style (inline, allowed by their hashes in the page's Content-Security-Policy).
 * The script fetches the race's signed result and the operator's JWK Sets from the page's own origin, checks that
 * it is an EdDSA signature, the Ed25519 signature with the browser's WebCrypto (against the results' keys; a
 * live snapshot against the live keys too, so that it is named as what it is), then that it is a final result by
 * its `typ` header and payload `type`, of the asked race, and final; only then it shows the issuer, the key, the
 * chain link, the standings and the history. Everything from the result is set as text, never as markup.
 */
import { LEGACY_LIVE_TYPES, LIVE_BOARD_KIND, LIVE_RACE_KIND, RACE_RESULT_KIND } from "../../../ports/signing.js";

export const VERIFY_STYLE = `
body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:52rem;padding:1rem;color:#111;background:#fafafa}
h1{font-size:1.3rem}#status{font-size:1.2rem;font-weight:700;padding:.6rem .8rem;border-radius:.4rem;background:#eee}
#status[data-state=valid]{background:#d9f5dd;color:#0b5d1e}#status[data-state=invalid]{background:#fde0e0;color:#8a1010}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0;word-break:break-all}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.25rem .4rem;text-align:left}
`;

/** The kinds' names, as docs/verify.md gives them: a final result's, and each live kind's (0.4.0's types too). */
const KINDS = {
  RESULT_TYP: RACE_RESULT_KIND.typ,
  RESULT_TYPE: RACE_RESULT_KIND.type,
  LIVE_RACE: [LIVE_RACE_KIND.typ, LIVE_RACE_KIND.type, LEGACY_LIVE_TYPES.race],
  LIVE_BOARD: [LIVE_BOARD_KIND.typ, LIVE_BOARD_KIND.type, LEGACY_LIVE_TYPES.board],
};

export const VERIFY_SCRIPT = `
(async () => {
  const { RESULT_TYP, RESULT_TYPE, LIVE_RACE, LIVE_BOARD } = ${JSON.stringify(KINDS)};
  const $ = (id) => document.getElementById(id);
  const status = $("status");
  const show = (state, text) => { status.dataset.state = state; status.textContent = text; };
  const b64u = (s) => {
    if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
    const t = s.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(s.length / 4) * 4, "=");
    return Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
  };
  const json = (bytes) => JSON.parse(new TextDecoder().decode(bytes));
  const row = (table, cells) => {
    const tr = table.insertRow();
    for (const cell of cells) tr.insertCell().textContent = String(cell);
  };
  const field = (name, value) => {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    $("facts").append(dt, dd);
  };
  const when = (s) => new Date(s * 1000).toISOString().replace(".000Z", "Z");
  const render = (header, p) => {
    field("Issuer", p.iss);
    field("Key id", header.kid);
    field("Race", p.title + " (" + p.raceId + ")");
    field("Affiliate", p.affiliateId);
    field("Period", when(p.period.startsAt) + " to " + when(p.period.endsAt) + " (" + p.timeZone + ")");
    field("Frozen at", when(p.frozenAt));
    field("Digest", p.digest);
    const prev = p.chain.previous;
    field("Chain", "#" + p.chain.sequence + (prev === null ? ", the affiliate's first signed result" : ", follows " + prev.raceId + " (sha256 " + prev.sha256 + ")"));
    for (const e of p.entries) row($("standings"), [e.rank, e.username, e.totalWageredDecimal + " " + p.currency, e.prize]);
    const h = p.historySummary;
    if (h) {
      for (const c of h.entries) row($("history"), [when(c.at), c.kind, c.actor.kind + (c.actor.id ? " " + c.actor.id : ""), c.fields.map((f) => f.field).join(", ")]);
      const s = h.standings;
      $("voids").textContent = s.voidedWagers + " voided wagers of " + s.usersAffected + " users while live or in review" + (s.ranksMoved && s.ranksMoved.length ? "; ranks moved: " + s.ranksMoved.join(", ") : "");
    }
  };
  // Which live kind a signed object says it is (by typ, or 0.4.0's payload type), if any.
  const liveKind = (header, p) => {
    const named = (kind) => kind.includes(header.typ) || kind.includes(p.type);
    return named(LIVE_RACE) ? "race" : named(LIVE_BOARD) ? "board" : undefined;
  };
  // Why a validly signed object is not this race's final result (docs/verify.md), or undefined when it is one.
  const refusal = (header, p, raceId) => {
    const live = liveKind(header, p);
    if (live !== undefined) {
      const what = live === "race" ? "race " + p.raceId + "'s standings at one moment while it ran" : "a board's standings at one moment";
      return "Not accepted: this is a live snapshot, not a final result (" + what + ", not who won).";
    }
    // A result signed before typ existed (0.4.0 and earlier) has none; nothing else was ever signed with its type.
    if ((header.typ !== undefined && header.typ !== RESULT_TYP) || p.type !== RESULT_TYPE) {
      return "Not accepted: this is not a race result (typ " + header.typ + ", type " + p.type + ").";
    }
    if (p.raceId !== raceId) return "Not accepted for this race: the signed result is of " + p.raceId + ", not " + raceId + ".";
    if (p.state !== undefined && p.state !== "final") return "Not accepted: the signed race is " + p.state + ", not final.";
    return undefined;
  };
  const keysOf = async (answer) => (answer.ok ? (await answer.json()).keys || [] : []);
  try {
    const raceId = document.body.dataset.race;
    const [signedAnswer, keysAnswer, liveKeysAnswer] = await Promise.all([
      fetch("/verify/" + raceId + "/signed", { cache: "no-store" }),
      fetch("/.well-known/jwks.json", { cache: "no-store" }),
      fetch("/.well-known/jwks-live.json", { cache: "no-store" }),
    ]);
    if (signedAnswer.status === 404) return show("none", "No signed result: the race is not final yet, or was frozen without a signing key.");
    if (!signedAnswer.ok || !keysAnswer.ok) throw new Error("the signed result or the keys could not be read");
    const signed = await signedAnswer.json();
    const parts = String(signed.jws).split(".");
    if (parts.length !== 3) return show("invalid", "Signature invalid: this is not a compact JWS.");
    let header;
    let payload;
    let signature;
    try {
      header = json(b64u(parts[0]));
      payload = json(b64u(parts[1]));
      signature = b64u(parts[2]);
    } catch {
      return show("invalid", "Signature invalid: the signed result does not decode (it was changed).");
    }
    if (header === null || typeof header !== "object" || payload === null || typeof payload !== "object") {
      return show("invalid", "Signature invalid: the signed result does not decode (it was changed).");
    }
    if (header.alg !== "EdDSA") return show("invalid", "Signature invalid: this is not an EdDSA signature (alg: " + header.alg + ").");
    // A live snapshot is checked with the live keys too, to say what it is; a result only ever with the result keys.
    const resultKeys = await keysOf(keysAnswer);
    const keys = liveKind(header, payload) === undefined ? resultKeys : resultKeys.concat(await keysOf(liveKeysAnswer));
    const jwk = keys.find((k) => k.kid === header.kid && k.kty === "OKP" && k.crv === "Ed25519");
    if (jwk === undefined) return show("invalid", "Signature invalid: the key " + header.kid + " is not one of this operator's keys.");
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    const good = await crypto.subtle.verify({ name: "Ed25519" }, key, signature, new TextEncoder().encode(parts[0] + "." + parts[1]));
    if (!good) return show("invalid", "Signature invalid: the result was changed after it was signed.");
    const refused = refusal(header, payload, raceId);
    if (refused !== undefined) return show("invalid", refused);
    render(header, payload);
    show("valid", "Signature valid: signed by " + payload.iss + " with key " + header.kid + ".");
  } catch (error) {
    show("invalid", "Could not check the signature: " + (error && error.message ? error.message : String(error)));
  }
})();
`;
