/**
 * C2SP signed notes (https://c2sp.org/signed-note) with Ed25519, written from the specification: a text ending in a
 * newline, an empty line, then one line per signature, `— <key name> <base64(key ID || signature)>`, the dash
 * U+2014. The signature covers the text exactly, its final newline included. A key's ID is the first four bytes of
 * SHA-256(key name || 0x0A || 0x01 || the 32-byte public key), 0x01 naming Ed25519; the verifier key a client is
 * given is `<key name>+<key ID as 8 hex digits>+<base64(0x01 || public key)>`, the form golang.org/x/mod/sumdb/note
 * reads.
 */
import { createHash, createPublicKey, type KeyObject, sign, verify } from "node:crypto";

const ED25519 = 0x01;
const SIGNATURE_PREFIX = "\u2014 ";
/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), before the 32 key bytes. */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** A note's key: its name and its 32-byte Ed25519 public key. */
export interface NoteKey {
  readonly name: string;
  readonly publicKey: Uint8Array;
}

/** Whether `name` may name a key: non-empty, no Unicode space and no plus sign. */
export function isKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(name);
}

/** The key's 4-byte ID: SHA-256(name || "\n" || 0x01 || public key)[:4]. */
export function keyId(key: NoteKey): Uint8Array {
  const digest = createHash("sha256")
    .update(key.name, "utf8")
    .update(Uint8Array.of(0x0a, ED25519))
    .update(key.publicKey)
    .digest();
  return new Uint8Array(digest.subarray(0, 4));
}

/** The verifier key: `<name>+<key ID, 8 lowercase hex digits>+<base64(0x01 || public key)>`. */
export function verifierKey(key: NoteKey): string {
  const id = Buffer.from(keyId(key)).toString("hex");
  const encoded = Buffer.concat([Uint8Array.of(ED25519), key.publicKey]).toString("base64");
  return `${key.name}+${id}+${encoded}`;
}

/** The key a verifier key names; undefined unless it is a well-formed Ed25519 verifier key whose ID matches. */
export function parseVerifierKey(vkey: string): NoteKey | undefined {
  // The name and the ID hold no plus sign; the base64 after them may.
  const [name, id, ...rest] = vkey.split("+");
  const encoded = rest.join("+");
  if (name === undefined || id === undefined) return undefined;
  if (!isKeyName(name) || !/^[0-9a-f]{8}$/.test(id) || !isBase64(encoded)) return undefined;
  const bytes = Buffer.from(encoded, "base64");
  if (bytes.length !== 33 || bytes[0] !== ED25519) return undefined;
  const key = { name, publicKey: new Uint8Array(bytes.subarray(1)) };
  return Buffer.from(keyId(key)).toString("hex") === id ? key : undefined;
}

/** The Ed25519 public key as Node's KeyObject. */
export function publicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, publicKey]), format: "der", type: "spki" });
}

/** One signature line for `text` by the key `name` (its public key given for the ID) with `privateKey`. */
export function signatureLine(text: string, key: NoteKey, privateKey: KeyObject): string {
  if (!isKeyName(key.name)) throw new RangeError(`not a key name: ${JSON.stringify(key.name)}`);
  const signature = sign(null, Buffer.from(text, "utf8"), privateKey);
  const encoded = Buffer.concat([keyId(key), signature]).toString("base64");
  return `${SIGNATURE_PREFIX}${key.name} ${encoded}\n`;
}

/** The signed note: `text` (ending in a newline), an empty line, and the signature line. */
export function signNote(text: string, key: NoteKey, privateKey: KeyObject): string {
  if (!isNoteText(text)) throw new RangeError("a note's text is non-empty UTF-8 ending in a newline");
  return `${text}\n${signatureLine(text, key, privateKey)}`;
}

/** One signature line as read: the key's name and ID, and the signature bytes. */
export interface NoteSignature {
  readonly name: string;
  readonly keyId: Uint8Array;
  readonly signature: Uint8Array;
}

/** A note split into its text and signatures; undefined when it is not a well-formed signed note. */
export function parseNote(note: string): { text: string; signatures: NoteSignature[] } | undefined {
  if (hasControlCharacter(note) || !note.endsWith("\n")) return undefined;
  const split = note.lastIndexOf("\n\n");
  if (split < 0) return undefined;
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split("\n");
  const signatures: NoteSignature[] = [];
  for (const line of lines) {
    if (!line.startsWith(SIGNATURE_PREFIX)) return undefined;
    const [name, encoded, ...extra] = line.slice(SIGNATURE_PREFIX.length).split(" ");
    if (name === undefined || encoded === undefined || extra.length > 0 || !isKeyName(name)) return undefined;
    if (!isBase64(encoded)) return undefined;
    const bytes = Buffer.from(encoded, "base64");
    if (bytes.length < 5) return undefined;
    signatures.push({
      name,
      keyId: new Uint8Array(bytes.subarray(0, 4)),
      signature: new Uint8Array(bytes.subarray(4)),
    });
  }
  return isNoteText(text) ? { text, signatures } : undefined;
}

/**
 * The note's text when it carries a valid signature by `key`, else undefined (signatures by other keys are
 * ignored, as the specification asks; a signature by this key that does not verify refuses the note).
 */
export function openNote(note: string, key: NoteKey): string | undefined {
  const parsed = parseNote(note);
  if (parsed === undefined) return undefined;
  const id = Buffer.from(keyId(key));
  const own = parsed.signatures.filter((s) => s.name === key.name && id.equals(s.keyId));
  if (own.length === 0) return undefined;
  const publicKey = publicKeyObject(key.publicKey);
  const valid = own.every((s) => verify(null, Buffer.from(parsed.text, "utf8"), publicKey, s.signature));
  return valid ? parsed.text : undefined;
}

/** Whether the text holds an ASCII control character other than a newline (a signed note may not). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 && code !== 0x0a) return true;
  }
  return false;
}

/** Half of a surrogate pair without the other: a string that is not UTF-8 text. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isNoteText(text: string): boolean {
  return text.length > 1 && text.endsWith("\n") && !text.startsWith("\n") && !LONE_SURROGATE.test(text);
}

function isBase64(text: string): boolean {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(text) && text.length % 4 === 0 && text.length > 0;
}
