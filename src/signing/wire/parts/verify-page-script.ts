/**
 * The verify page's one inline script (allowed by its hash in the page's Content-Security-Policy). It reads which
 * result to check from the page's address (`?base=<the operator's URL>&race=<race id>[&vkey=<the log's verifier
 * key>]`, or `/verify/<race id>` on the operator's own server) or the page's form, fetches from the operator (no
 * key, cross-origin when a third party hosts the page) the result keys, the live keys, the signed result with its
 * place in the log, and the log's verifier key unless it is pinned (the `vkey` parameter, or the host's
 * `<meta name="topwagers-log-key">`), then checks, in this order, each failure named and nothing of the payload
 * shown: that the JWS is an EdDSA signature by one of the operator's result keys (a live snapshot is checked with the
 * live keys too, so that it is named as what it is), that it is this race's final result by its `typ` and payload
 * `type`, and its place in the log (./verify-page-log.ts). Only then it shows the payload: the facts, the standings
 * (their caption the verdict), the prize table, what is unallocated, each change with its before and after, the
 * excluded users, voids and late wagers. Everything from the operator is set as text, never as markup.
 */
import { LEGACY_LIVE_TYPES, LIVE_BOARD_KIND, LIVE_RACE_KIND, RACE_RESULT_KIND } from "../../../ports/signing.js";
import { LOG_CHECKS } from "./verify-page-log.js";
import { RENDER } from "./verify-page-render.js";

/** The kinds' names, as docs/verify.md gives them: a final result's, and each live kind's (0.4.0's types too). */
const KINDS = {
  RESULT_TYP: RACE_RESULT_KIND.typ,
  RESULT_TYPE: RACE_RESULT_KIND.type,
  LIVE_RACE: [LIVE_RACE_KIND.typ, LIVE_RACE_KIND.type, LEGACY_LIVE_TYPES.race],
  LIVE_BOARD: [LIVE_BOARD_KIND.typ, LIVE_BOARD_KIND.type, LEGACY_LIVE_TYPES.board],
};

/** The bytes and text helpers the other parts use. */
const HELPERS = `
  const $ = (id) => document.getElementById(id);
  const enc = new TextEncoder();
  const status = $("status");
  const show = (state, text) => { status.dataset.state = state; status.textContent = text; };
  class Refusal extends Error {}
  const refusal = (text) => new Refusal(text);
  const b64u = (s) => {
    if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
    const t = s.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(s.length / 4) * 4, "=");
    return Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
  };
  const b64 = (s) => {
    if (typeof s !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new Error("not base64");
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  };
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const sha256 = async (bytes) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const concat = (...parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
  };
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const json = (bytes) => JSON.parse(new TextDecoder().decode(bytes));
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
`;

/** The signature's checks: EdDSA, the operator's result key, then this race's final result (docs/verify.md). */
const JWS_CHECKS = `
  const { RESULT_TYP, RESULT_TYPE, LIVE_RACE, LIVE_BOARD } = ${JSON.stringify(KINDS)};
  // Which live kind a signed object says it is (by typ, or 0.4.0's payload type), if any.
  const liveKind = (header, p) => {
    const named = (kind) => kind.includes(header.typ) || kind.includes(p.type);
    return named(LIVE_RACE) ? "race" : named(LIVE_BOARD) ? "board" : undefined;
  };
  // Why a validly signed object is not this race's final result, or undefined when it is one.
  const kindRefusal = (header, p, raceId) => {
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
  const decoded = (jws) => {
    const parts = String(jws).split(".");
    if (parts.length !== 3) throw refusal("Signature invalid: this is not a compact JWS.");
    try {
      const [header, payload, signature] = [json(b64u(parts[0])), json(b64u(parts[1])), b64u(parts[2])];
      if (header !== null && typeof header === "object" && payload !== null && typeof payload === "object") {
        return { header, payload, signature, input: enc.encode(parts[0] + "." + parts[1]) };
      }
    } catch {}
    throw refusal("Signature invalid: the signed result does not decode (it was changed).");
  };
  // The header and payload of this race's final result signed by one of the result keys; else a Refusal.
  const checkJws = async (jws, raceId, resultKeys, liveKeys) => {
    const { header, payload, signature, input } = decoded(jws);
    if (header.alg !== "EdDSA") throw refusal("Signature invalid: this is not an EdDSA signature (alg: " + header.alg + ").");
    // A live snapshot is checked with the live keys too, to say what it is; a result only ever with the result keys.
    const keys = liveKind(header, payload) === undefined ? resultKeys : resultKeys.concat(liveKeys);
    const jwk = keys.find((k) => k.kid === header.kid && k.kty === "OKP" && k.crv === "Ed25519");
    if (jwk === undefined) throw refusal("Signature invalid: the key " + header.kid + " is not one of this operator's keys.");
    const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    if (!(await crypto.subtle.verify({ name: "Ed25519" }, key, signature, input))) {
      throw refusal("Signature invalid: the result was changed after it was signed.");
    }
    const refused = kindRefusal(header, payload, raceId);
    if (refused !== undefined) throw refusal(refused);
    return { header, payload };
  };
`;

/** What to check (the address, the host's pins, the form) and the fetches from the operator. */
const INPUTS = String.raw`
  const pin = (name) => (document.querySelector('meta[name="' + name + '"]')?.content ?? "").trim();
  const params = new URLSearchParams(location.search);
  const onPath = /^\/verify\/(race_[a-z2-7]{20})$/.exec(location.pathname);
  const asked = () => {
    const pinnedBase = pin("topwagers-operator");
    const pinnedKey = pin("topwagers-log-key");
    const base = params.get("base") ?? (pinnedBase || (onPath !== null || location.pathname === "/verify" ? location.origin : ""));
    const vkey = params.get("vkey") ?? "";
    if (pinnedBase !== "" && base.replace(/\/+$/, "") !== pinnedBase.replace(/\/+$/, "")) {
      throw refusal("Not checked: this page checks " + pinnedBase + "'s results only, not " + base + "'s.");
    }
    if (pinnedKey !== "" && vkey !== "" && vkey.trim() !== pinnedKey) {
      throw refusal("Not checked: the link names another log key than the one this page pins.");
    }
    return { base: base.trim().replace(/\/+$/, ""), race: (params.get("race") ?? onPath?.[1] ?? "").trim(), vkey: pinnedKey || vkey.trim(), pinnedBy: pinnedKey !== "" ? "this page" : vkey !== "" ? "the link" : "" };
  };
  const fillForm = (what) => {
    $("base").value = what.base || location.origin;
    $("race").value = what.race;
    $("vkey").value = what.pinnedBy === "the link" ? what.vkey : "";
    $("ask").addEventListener("submit", (event) => {
      event.preventDefault();
      const next = new URLSearchParams({ base: $("base").value.trim(), race: $("race").value.trim() });
      if ($("vkey").value.trim() !== "") next.set("vkey", $("vkey").value.trim());
      location.assign(location.pathname + "?" + next);
    });
  };
  const get = async (url) => {
    try {
      return await fetch(url, { cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
    } catch {
      throw new Error(url + " could not be read (the network, the operator's CORS, or this page's connect-src)");
    }
  };
  const keysOf = async (answer) => (answer.ok ? (await answer.json()).keys || [] : []);
  const signedOf = async (base, race) => {
    const answer = await get(base + "/verify/" + race + "/signed");
    if (answer.status === 404) return undefined;
    if (!answer.ok) throw new Error(base + "/verify/" + race + "/signed answered " + answer.status);
    return answer.json();
  };
`;

/** The whole check, in order; the verdict last. */
const MAIN = String.raw`
  const check = async (what) => {
    if (!/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(what.base)) throw refusal("Not checked: give the operator's address as http(s)://host.");
    if (!/^race_[a-z2-7]{20}$/.test(what.race)) throw refusal("Not checked: " + what.race + " is not a race id (race_ and 20 letters and digits).");
    document.title = "Check " + what.race;
    checked("Operator", what.base);
    const [first, keysAnswer, liveAnswer, vkeyAnswer] = await Promise.all([
      signedOf(what.base, what.race),
      get(what.base + "/.well-known/jwks.json"),
      get(what.base + "/.well-known/jwks-live.json"),
      what.vkey === "" ? get(what.base + "/log/vkey") : undefined,
    ]);
    if (first === undefined) return show("none", "No signed result: the race is not final yet, or was frozen without a signing key.");
    if (!keysAnswer.ok) throw new Error(what.base + "/.well-known/jwks.json answered " + keysAnswer.status);
    const vkey = what.vkey !== "" ? what.vkey : vkeyAnswer.ok ? (await vkeyAnswer.text()).trim() : "";
    const { header, payload } = await checkJws(first.jws, what.race, await keysOf(keysAnswer), await keysOf(liveAnswer));
    let signed = first;
    for (let tries = 0; signed.log && signed.log.checkpoint === null && tries < 20; tries++) {
      show("checking", "Signature valid; waiting for the operator's log to hold this result…");
      await sleep(1000);
      signed = (await signedOf(what.base, what.race)) ?? signed;
    }
    if (signed.jws !== first.jws) throw refusal("Not accepted: the operator answered two different signed results for this race.");
    if (!signed.log) throw refusal("Not accepted: the result is validly signed by " + payload.iss + " but is not in its log (frozen before the log began, or left out of it).");
    if (vkey === "") throw new Error(what.base + "/log/vkey answered " + vkeyAnswer.status);
    const logKey = await logKeyOf(vkey);
    checked("Log key", logKey.vkey);
    checked("Its fingerprint", logKey.fingerprint + (what.pinnedBy !== "" ? " (pinned by " + what.pinnedBy + ")" : " (from the operator, not pinned: compare it with one published elsewhere)"));
    if (what.pinnedBy === "") {
      // Said beside the verdict, not only under the standings: a key the checked operator served proves less.
      const pin = document.getElementById("pin");
      pin.textContent = "The log's key came from the operator being checked (fingerprint " + logKey.fingerprint + "): compare it with one published elsewhere, or use a link or copy of this page that pins it.";
      pin.hidden = false;
    }
    if (signed.log.checkpoint === null) {
      return show("pending", "Signed by " + payload.iss + ", but not yet in a checkpoint of its log: try again in a minute.");
    }
    const place = await checkLogPlace(signed.log, logKey, what.race, signed.jws, payload);
    render(header, payload, place);
    const where = "#" + (place.index + 1) + " of " + place.tree.size + " in " + place.tree.origin + "'s log";
    show("valid", "Valid: result " + where + ", signed by " + payload.iss + " with key " + header.kid + ".");
  };
  const what = (() => { try { return asked(); } catch (error) { return error; } })();
  fillForm(what instanceof Error ? { base: "", race: "", vkey: "", pinnedBy: "" } : what);
  if (what instanceof Error) return show("invalid", what.message);
  if (what.base === "" || what.race === "") return show("idle", "Give the operator's address and a race id to check its result.");
  if (!globalThis.crypto || !crypto.subtle) return show("invalid", "Could not check: this browser gives the page no WebCrypto (open it over https).");
  try {
    // RFC 8032's first test key: whether this browser's WebCrypto knows Ed25519 at all.
    const rfc8032 = Uint8Array.from(atob("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="), (c) => c.charCodeAt(0));
    await crypto.subtle.importKey("raw", rfc8032, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return show("invalid", "Could not check: this browser's WebCrypto has no Ed25519 (Chromium 137, Firefox 129, Safari 17 or later have it).");
  }
  try {
    await check(what);
  } catch (error) {
    show("invalid", error instanceof Refusal ? error.message : "Could not check: " + (error && error.message ? error.message : String(error)));
  }
`;

export const VERIFY_SCRIPT = `
(async () => {
  "use strict";${HELPERS}${JWS_CHECKS}${LOG_CHECKS}${RENDER}${INPUTS}${MAIN}})();
`;
