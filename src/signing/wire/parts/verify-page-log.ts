/**
 * The verify page's check of a result's place in the operator's results log (docs/verify.md, "The results log"),
 * as a part of the page's one inline script, written from the specifications and run with the browser's WebCrypto
 * (SHA-256 and Ed25519 in crypto.subtle): the log's verifier key (C2SP signed-note: `<name>+<key ID>+<base64(0x01 ||
 * key)>`, the ID re-derived), the checkpoint opened with it (a signed note whose signature line of that key verifies
 * over its text; C2SP tlog-checkpoint: origin, size, root), the entry (RFC 8785 canonical JSON naming this race's
 * final result and this JWS's SHA-256), and the inclusion proof (RFC 9162 section 2.1.3.2: the root recomputed from
 * the leaf 0x00 || entry and the proof's hashes, nodes 0x01 || left || right). Each failure throws a `Refusal` that
 * names it; the page shows its text. It uses the script's helpers (`enc`, `b64`, `hex`, `sha256`, `concat`, `same`,
 * `refusal`), defined before it.
 */

export const LOG_CHECKS = String.raw`
  // The log's verifier key: the name, the key ID and the Ed25519 public key, the ID checked against the key.
  const logKeyOf = async (text) => {
    const vkey = String(text).trim();
    const [name, id, ...rest] = vkey.split("+");
    let raw = new Uint8Array(0);
    try { raw = b64(rest.join("+")); } catch {}
    if (!name || /\s/.test(name) || !/^[0-9a-f]{8}$/.test(id || "") || raw.length !== 33 || raw[0] !== 1) {
      throw refusal("Log check failed: the log's key is not an Ed25519 verifier key (name+id+key): " + vkey.slice(0, 80));
    }
    const derived = hex((await sha256(concat(enc.encode(name + "\n"), raw))).slice(0, 4));
    if (derived !== id) throw refusal("Log check failed: the log's key ID " + id + " does not name its key.");
    const key = await crypto.subtle.importKey("raw", raw.slice(1), { name: "Ed25519" }, false, ["verify"]);
    const fingerprint = hex(await sha256(enc.encode(vkey))).slice(0, 32).replace(/(.{4})(?!$)/g, "$1 ");
    return { name, id, key, vkey, fingerprint };
  };

  // The checkpoint: a signed note whose signature by the log's key verifies over its text, then origin, size, root.
  const openCheckpoint = async (note, logKey) => {
    const bad = (why) => refusal("Log check failed: the checkpoint " + why + ".");
    if (typeof note !== "string" || !note.endsWith("\n") || /[\u0000-\u0009\u000b-\u001f]/.test(note)) throw bad("is not a signed note");
    const split = note.lastIndexOf("\n\n");
    if (split < 0) throw bad("is not a signed note");
    const text = note.slice(0, split + 1);
    const own = [];
    for (const line of note.slice(split + 2, -1).split("\n")) {
      const parts = /^\u2014 (\S+) ([A-Za-z0-9+/]+=*)$/.exec(line);
      if (parts === null) throw bad("is not a signed note");
      let bytes = new Uint8Array(0);
      try { bytes = b64(parts[2]); } catch { throw bad("is not a signed note"); }
      if (parts[1] === logKey.name && bytes.length === 68 && hex(bytes.slice(0, 4)) === logKey.id) own.push(bytes.slice(4));
    }
    const whose = logKey.name + "+" + logKey.id;
    if (own.length === 0) throw bad("is not signed by the log's key " + whose);
    for (const signature of own) {
      const good = await crypto.subtle.verify({ name: "Ed25519" }, logKey.key, signature, enc.encode(text));
      if (!good) throw bad("does not verify with the log's key " + whose + " (it was changed after it was signed)");
    }
    const [origin, size, root] = text.split("\n");
    if (origin !== logKey.name) throw bad("is " + origin + "'s, not " + logKey.name + "'s");
    let rootHash = new Uint8Array(0);
    try { rootHash = b64(root); } catch {}
    if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || rootHash.length !== 32) throw bad("holds no tree size and root hash");
    return { origin, size: Number(size), root: rootHash };
  };

  // RFC 8785 canonical JSON of what JSON.parse gave (strings and numbers as ECMAScript writes them, keys sorted).
  const canonical = (v) => v === null || typeof v !== "object" ? JSON.stringify(v)
    : Array.isArray(v) ? "[" + v.map(canonical).join(",") + "]"
    : "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";

  // The entry: canonical, this race's final result, naming this JWS by its SHA-256 and the payload's digest.
  const checkEntry = async (text, raceId, jws, payload) => {
    let entry;
    try { entry = JSON.parse(text); } catch {}
    if (entry === null || typeof entry !== "object" || canonical(entry) !== text) {
      throw refusal("Log check failed: the log entry is not in its canonical form.");
    }
    if (entry.type !== "topwagers.log-entry.v1" || entry.kind !== "final") {
      throw refusal("Log check failed: the log entry is not a final result (" + entry.type + ", " + entry.kind + ").");
    }
    if (entry.raceId !== raceId) throw refusal("Log check failed: the log entry is race " + entry.raceId + "'s, not " + raceId + "'s.");
    if (entry.sha256 !== hex(await sha256(enc.encode(jws)))) {
      throw refusal("Log check failed: the log entry names another signed result than this one (sha256 " + entry.sha256 + ").");
    }
    if (entry.digest !== payload.digest || entry.affiliateId !== payload.affiliateId || entry.at !== payload.frozenAt) {
      throw refusal("Log check failed: the log entry's affiliate, time or digest is not the signed result's.");
    }
    return entry;
  };

  // RFC 9162 section 2.1.3.2: whether the proof leads from leaf number index to the root of a tree of size leaves.
  const node = (left, right) => sha256(concat(Uint8Array.of(1), left, right));
  const included = async (index, size, leaf, proof, root) => {
    if (!Number.isSafeInteger(index) || index < 0 || index >= size) return false;
    let fn = index;
    let sn = size - 1;
    let r = leaf;
    for (const p of proof) {
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        r = await node(p, r);
        while (fn % 2 === 0 && fn !== 0) { fn /= 2; sn = Math.floor(sn / 2); }
      } else {
        r = await node(r, p);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && same(r, root);
  };

  // The whole place, with the log's key: checkpoint, entry and proof; how long the proof and all three took (ms).
  const checkLogPlace = async (log, logKey, raceId, jws, payload) => {
    const began = performance.now();
    const tree = await openCheckpoint(log.checkpoint, logKey);
    await checkEntry(log.entry, raceId, jws, payload);
    let proof;
    try { proof = log.proof.map(b64); } catch {}
    if (!Array.isArray(proof) || proof.some((p) => p.length !== 32)) throw refusal("Log check failed: the inclusion proof is not a list of SHA-256 hashes.");
    const started = performance.now();
    const leaf = await sha256(concat(Uint8Array.of(0), enc.encode(log.entry)));
    const good = await included(log.index, tree.size, leaf, proof, tree.root);
    const proofMs = performance.now() - started;
    if (!good) throw refusal("Log check failed: the inclusion proof does not lead to the checkpoint's root (entry #" + (Number(log.index) + 1) + " is not in the tree it signs).");
    return { logKey, tree, index: log.index, proofMs, logMs: performance.now() - began, hashes: proof.length };
  };
`;
