/**
 * The verify page's script and style (inline, allowed by their hashes in the page's Content-Security-Policy).
 * The script fetches the race's signed result and the operator's JWK Set from the page's own origin, checks the
 * Ed25519 signature with the browser's WebCrypto, and shows the issuer, the key, the chain link, the standings
 * and the history. Everything from the result is set as text, never as markup.
 */

export const VERIFY_STYLE = `
body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:52rem;padding:1rem;color:#111;background:#fafafa}
h1{font-size:1.3rem}#status{font-size:1.2rem;font-weight:700;padding:.6rem .8rem;border-radius:.4rem;background:#eee}
#status[data-state=valid]{background:#d9f5dd;color:#0b5d1e}#status[data-state=invalid]{background:#fde0e0;color:#8a1010}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0;word-break:break-all}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.25rem .4rem;text-align:left}
`;

export const VERIFY_SCRIPT = `
(async () => {
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
  try {
    const raceId = document.body.dataset.race;
    const [signedAnswer, keysAnswer] = await Promise.all([
      fetch("/verify/" + raceId + "/signed", { cache: "no-store" }),
      fetch("/.well-known/jwks.json", { cache: "no-store" }),
    ]);
    if (signedAnswer.status === 404) return show("none", "No signed result: the race is not final yet, or was frozen without a signing key.");
    if (!signedAnswer.ok || !keysAnswer.ok) throw new Error("the signed result or the keys could not be read");
    const signed = await signedAnswer.json();
    const keys = await keysAnswer.json();
    const parts = String(signed.jws).split(".");
    if (parts.length !== 3) return show("invalid", "Signature invalid: this is not a compact JWS.");
    let header;
    let payload;
    try {
      header = json(b64u(parts[0]));
      payload = json(b64u(parts[1]));
    } catch {
      return show("invalid", "Signature invalid: the signed result does not decode (it was changed).");
    }
    const jwk = (keys.keys || []).find((k) => k.kid === header.kid && k.kty === "OKP" && k.crv === "Ed25519");
    if (header.alg !== "EdDSA" || jwk === undefined) {
      return show("invalid", "Signature invalid: the key " + header.kid + " is not one of this operator's published keys.");
    }
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    const good = await crypto.subtle.verify({ name: "Ed25519" }, key, b64u(parts[2]), new TextEncoder().encode(parts[0] + "." + parts[1]));
    render(header, payload);
    if (!good) return show("invalid", "Signature invalid: the result was changed after it was signed.");
    if (payload.raceId !== raceId) return show("invalid", "Signature invalid for this race: the signed result is of " + payload.raceId + ".");
    show("valid", "Signature valid: signed by " + payload.iss + " with key " + header.kid + ".");
  } catch (error) {
    show("invalid", "Could not check the signature: " + (error && error.message ? error.message : String(error)));
  }
})();
`;
