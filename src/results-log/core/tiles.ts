/**
 * The C2SP tlog-tiles layout (https://c2sp.org/tlog-tiles), written from the specification: tiles of height 8,
 * so a full tile holds 256 hashes (8,192 bytes). The tile at level L, index N holds the hashes
 * MTH(D[(N·256 + i)·256^L : (N·256 + i + 1)·256^L]) for i = 0…255: level 0 holds leaf hashes, level 1 the roots of
 * full level-0 tiles, and so on. A tree of size s has floor(s / 256^L) hashes at level L; the last tile of a level
 * is partial (1–255 hashes) unless that count is a multiple of 256. Entry bundles hold the entries of a level-0
 * tile, each as a big-endian uint16 length and its bytes.
 *
 * Paths: `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`; N as zero-padded 3-digit path elements, every one
 * but the last prefixed with `x` (1234067 → `x001/x234/067`). Only canonical paths parse.
 */
import { HASH_SIZE } from "./merkle.js";

/** Tree levels per tile. */
export const TILE_HEIGHT = 8;
/** Hashes (or entries) in a full tile. */
export const TILE_WIDTH = 256;
/** The largest level a path may name. */
export const MAX_TILE_LEVEL = 63;
/** The largest entry an entry bundle can frame. */
export const MAX_ENTRY_BYTES = 0xffff;

/** A tile of hashes (`level` ≥ 0) or an entry bundle (`level` "entries"): its index and width (256: full). */
export interface TileRef {
  readonly level: number | "entries";
  readonly index: number;
  readonly width: number;
}

/** How many hashes level `level` has in a tree of `size` leaves: floor(size / 256^level). */
export function hashesAtLevel(level: number, size: number): number {
  return Math.floor(size / TILE_WIDTH ** level);
}

/**
 * How many hashes of the tile (`level` 0 for entry bundles, which follow level 0) a tree of `size` has: 256 for a
 * full tile, 1–255 for the partial last one, 0 for a tile beyond the tree.
 */
export function tileWidthAt(level: number, index: number, size: number): number {
  const available = hashesAtLevel(level, size) - index * TILE_WIDTH;
  return Math.max(0, Math.min(TILE_WIDTH, available));
}

/** The path element(s) of a tile index: 67 → "067", 1234067 → "x001/x234/067". */
export function tileIndexPath(index: number): string {
  if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`not a tile index: ${index}`);
  const groups: string[] = [];
  let rest = index;
  do {
    groups.unshift(String(rest % 1000).padStart(3, "0"));
    rest = Math.floor(rest / 1000);
  } while (rest > 0);
  return groups.map((group, i) => (i < groups.length - 1 ? `x${group}` : group)).join("/");
}

/** The tile's path under the log's prefix, e.g. "tile/0/x001/067.p/12" or "tile/entries/000". */
export function tilePath(tile: TileRef): string {
  const partial = tile.width < TILE_WIDTH ? `.p/${tile.width}` : "";
  return `tile/${tile.level}/${tileIndexPath(tile.index)}${partial}`;
}

const LEVEL = /^(0|[1-9][0-9]?)$/;
const WIDTH = /^[1-9][0-9]{0,2}$/;

/** The tile a path (under the log's prefix, without a leading slash) names, or undefined when it names none. */
export function parseTilePath(path: string): TileRef | undefined {
  const parts = path.split("/");
  if (parts[0] !== "tile" || parts.length < 3) return undefined;
  const levelText = parts[1] as string;
  let level: number | "entries";
  if (levelText === "entries") level = "entries";
  else if (LEVEL.test(levelText) && Number(levelText) <= MAX_TILE_LEVEL) level = Number(levelText);
  else return undefined;
  let elements = parts.slice(2);
  let width = TILE_WIDTH;
  const last = elements[elements.length - 1] as string;
  if (last.endsWith(".p")) return undefined;
  const beforePartial = elements[elements.length - 2];
  if (beforePartial?.endsWith(".p")) {
    if (!WIDTH.test(last) || Number(last) >= TILE_WIDTH) return undefined;
    width = Number(last);
    elements = [...elements.slice(0, -2), beforePartial.slice(0, -2)];
  }
  const index = parseIndexElements(elements);
  return index === undefined ? undefined : { level, index, width };
}

function parseIndexElements(elements: readonly string[]): number | undefined {
  let index = 0;
  for (const [i, element] of elements.entries()) {
    const isLast = i === elements.length - 1;
    const digits = isLast ? element : element.startsWith("x") ? element.slice(1) : undefined;
    if (digits === undefined || !/^[0-9]{3}$/.test(digits)) return undefined;
    // The canonical form has no leading group of zeros ("x000/067" is 67 written another way).
    if (i === 0 && !isLast && digits === "000") return undefined;
    index = index * 1000 + Number(digits);
  }
  return Number.isSafeInteger(index) ? index : undefined;
}

/** The bytes of a tile of hashes: the hashes, concatenated. */
export function tileBytes(hashes: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(hashes.length * HASH_SIZE);
  hashes.forEach((hash, i) => {
    if (hash.length !== HASH_SIZE) throw new RangeError("a tile holds 32-byte hashes");
    out.set(hash, i * HASH_SIZE);
  });
  return out;
}

/** The hashes of a tile's bytes; undefined when its length is not a whole number of hashes. */
export function tileHashes(bytes: Uint8Array): Uint8Array[] | undefined {
  if (bytes.length % HASH_SIZE !== 0) return undefined;
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += HASH_SIZE) out.push(bytes.slice(at, at + HASH_SIZE));
  return out;
}

/** An entry bundle: each entry as its length (big-endian uint16) and its bytes. */
export function entryBundle(entries: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(entries.reduce((sum, entry) => sum + 2 + entry.length, 0));
  let at = 0;
  for (const entry of entries) {
    if (entry.length > MAX_ENTRY_BYTES) throw new RangeError(`an entry of ${entry.length} bytes does not fit a bundle`);
    out[at] = entry.length >> 8;
    out[at + 1] = entry.length & 0xff;
    out.set(entry, at + 2);
    at += 2 + entry.length;
  }
  return out;
}

/** The entries of a bundle; undefined when it does not end at an entry's end. */
export function bundleEntries(bundle: Uint8Array): Uint8Array[] | undefined {
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bundle.length) {
    if (at + 2 > bundle.length) return undefined;
    const length = ((bundle[at] as number) << 8) | (bundle[at + 1] as number);
    if (at + 2 + length > bundle.length) return undefined;
    out.push(bundle.slice(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return out;
}
