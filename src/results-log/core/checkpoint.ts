/**
 * The C2SP tlog-checkpoint body (https://c2sp.org/tlog-checkpoint), written from the specification: the origin
 * (the log's name, here derived from ISSUER: `casino.example/topwagers`), the tree size in decimal with no leading
 * zero, and the root hash in standard base64, each line ending in a newline; extension lines may follow (this log
 * writes none). The checkpoint is signed as a signed note (./signed-note.ts) by the log's key, whose name is the
 * origin.
 */
import { HASH_SIZE, type Hash } from "./merkle.js";
import { isKeyName } from "./signed-note.js";

export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly root: Hash;
  /** Lines after the root hash; none in what this log signs. */
  readonly extensions: readonly string[];
}

/** The checkpoint's text: three lines (and any extension lines), each ending in "\n". */
export function checkpointText(checkpoint: Omit<Checkpoint, "extensions"> & Partial<Checkpoint>): string {
  // The specification asks only for a non-empty line; this log's origin is also its key's name (isKeyName).
  if (checkpoint.origin.length === 0 || checkpoint.origin.includes("\n")) {
    throw new RangeError(`not an origin: ${JSON.stringify(checkpoint.origin)}`);
  }
  const extensions = checkpoint.extensions ?? [];
  const lines = [checkpoint.origin, String(checkpoint.size), Buffer.from(checkpoint.root).toString("base64")];
  return `${[...lines, ...extensions].join("\n")}\n`;
}

/** The checkpoint a note's text holds; undefined when it is not a well-formed checkpoint. */
export function parseCheckpoint(text: string): Checkpoint | undefined {
  if (!text.endsWith("\n")) return undefined;
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3 || lines.some((line) => line.length === 0)) return undefined;
  const [origin, sizeText, rootText, ...extensions] = lines as [string, string, string, ...string[]];
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) return undefined;
  if (!/^[A-Za-z0-9+/]{43}=$/.test(rootText)) return undefined;
  const root = new Uint8Array(Buffer.from(rootText, "base64"));
  if (root.length !== HASH_SIZE) return undefined;
  return { origin, size: Number(sizeText), root, extensions };
}

/**
 * The log's origin from the operator's issuer: the issuer without its scheme and trailing slashes, then
 * "/topwagers" (`https://casino.example` → `casino.example/topwagers`). Undefined when that is not a key name
 * (a space or a plus sign in it): LOG_ORIGIN must then be set.
 */
export function originOfIssuer(issuer: string): string | undefined {
  const bare = issuer
    .trim()
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")
    .replace(/\/+$/, "");
  const origin = `${bare}/topwagers`;
  return bare.length > 0 && isKeyName(origin) ? origin : undefined;
}
