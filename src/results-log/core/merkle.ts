/**
 * The Merkle tree of RFC 6962 §2.1 (RFC 9162 §2.1), written from the RFCs: SHA-256, a leaf hashed as
 * SHA-256(0x00 || entry), an interior node as SHA-256(0x01 || left || right), a tree of n > 1 leaves split at k,
 * the largest power of two below n. Inclusion and consistency proofs are made (RFC 9162 §2.1.3.1, §2.1.4.1) from
 * the hashes of complete subtrees a `SubtreeReader` gives, and checked (§2.1.3.2, §2.1.4.2) from the proof alone.
 *
 * Indexes and sizes are JavaScript numbers (exact below 2^53); bits are taken by arithmetic, never by the 32-bit
 * bitwise operators.
 */
import { createHash } from "node:crypto";

/** A SHA-256 hash: 32 bytes. */
export type Hash = Uint8Array;

export const HASH_SIZE = 32;

const LEAF_PREFIX = Uint8Array.of(0x00);
const NODE_PREFIX = Uint8Array.of(0x01);

/** The hash of a leaf: SHA-256(0x00 || entry). */
export function leafHash(entry: Uint8Array): Hash {
  return new Uint8Array(createHash("sha256").update(LEAF_PREFIX).update(entry).digest());
}

/** The hash of an interior node: SHA-256(0x01 || left || right). */
export function nodeHash(left: Hash, right: Hash): Hash {
  return new Uint8Array(createHash("sha256").update(NODE_PREFIX).update(left).update(right).digest());
}

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT: Hash = new Uint8Array(createHash("sha256").digest());

/** The largest power of two smaller than n (n > 1). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** Whether n is a power of two (1, 2, 4, …). */
export function isPowerOfTwo(n: number): boolean {
  if (n < 1) return false;
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
}

/** log2 of a power of two. */
export function log2(n: number): number {
  let level = 0;
  for (let k = 1; k < n; k *= 2) level += 1;
  return level;
}

/** The Merkle Tree Hash of leaves given by their leaf hashes (MTH, RFC 6962 §2.1). */
export function rootOf(leaves: readonly Hash[]): Hash {
  if (leaves.length === 0) return EMPTY_ROOT;
  return rangeHash(0, leaves.length, (level, index) => perfectRoot(leaves, index * 2 ** level, 2 ** level));
}

/** The root of `count` (a power of two) leaf hashes from `start`. */
function perfectRoot(leaves: readonly Hash[], start: number, count: number): Hash {
  let layer = leaves.slice(start, start + count);
  while (layer.length > 1) {
    const next: Hash[] = [];
    for (let i = 0; i < layer.length; i += 2) next.push(nodeHash(layer[i] as Hash, layer[i + 1] as Hash));
    layer = next;
  }
  const root = layer[0];
  if (root === undefined || layer.length !== 1) throw new RangeError("not a complete subtree");
  return root;
}

/**
 * The hash of the complete subtree of 2^level leaves that starts at leaf index × 2^level (level 0: a leaf hash).
 * What a proof is made of; the caller reads or computes it.
 */
export type SubtreeReader = (level: number, index: number) => Hash;

/**
 * MTH(D[lo:hi]) for a range the RFC's recursion meets: split at the largest power of two below its length, each
 * complete part read whole.
 */
export function rangeHash(lo: number, hi: number, read: SubtreeReader): Hash {
  const n = hi - lo;
  if (n < 1) throw new RangeError(`empty range ${lo}..${hi}`);
  if (isPowerOfTwo(n) && lo % n === 0) return read(log2(n), lo / n);
  const k = splitPoint(n);
  return nodeHash(rangeHash(lo, lo + k, read), rangeHash(lo + k, hi, read));
}

/** The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162 §2.1.3.1), the leaf's side first. */
export function inclusionProof(size: number, index: number, read: SubtreeReader): Hash[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const proof: Hash[] = [];
  const path = (m: number, lo: number, hi: number): void => {
    const n = hi - lo;
    if (n <= 1) return;
    const k = splitPoint(n);
    if (m < k) {
      path(m, lo, lo + k);
      proof.push(rangeHash(lo + k, hi, read));
    } else {
      path(m - k, lo + k, hi);
      proof.push(rangeHash(lo, lo + k, read));
    }
  };
  path(index, 0, size);
  return proof;
}

/** The consistency proof from the tree of `oldSize` leaves to the tree of `newSize` (RFC 9162 §2.1.4.1). */
export function consistencyProof(oldSize: number, newSize: number, read: SubtreeReader): Hash[] {
  if (!(oldSize >= 1 && oldSize <= newSize)) throw new RangeError(`no consistency proof from ${oldSize} to ${newSize}`);
  const proof: Hash[] = [];
  const subproof = (m: number, lo: number, hi: number, complete: boolean): void => {
    const n = hi - lo;
    if (m === n) {
      if (!complete) proof.push(rangeHash(lo, hi, read));
      return;
    }
    const k = splitPoint(n);
    if (m <= k) {
      subproof(m, lo, lo + k, complete);
      proof.push(rangeHash(lo + k, hi, read));
    } else {
      subproof(m - k, lo + k, hi, false);
      proof.push(rangeHash(lo, lo + k, read));
    }
  };
  subproof(oldSize, 0, newSize, true);
  return proof;
}

const odd = (n: number) => n % 2 === 1;
const half = (n: number) => Math.floor(n / 2);

/**
 * RFC 9162's step for a node that is its parent's last child with no right sibling (fn == sn, fn even): "if LSB(fn)
 * is not set, right-shift both fn and sn equally until either LSB(fn) is set or fn is 0".
 */
function upToRightChild(fn: number, sn: number): [number, number] {
  while (!odd(fn) && fn !== 0) {
    fn = half(fn);
    sn = half(sn);
  }
  return [fn, sn];
}

/** Whether two hashes are the same bytes. */
export function sameHash(a: Hash, b: Hash): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** Whether `proof` shows the leaf `leaf` (its leaf hash) at `index` in the tree of `size` with `root` (§2.1.3.2). */
export function verifyInclusion(index: number, size: number, leaf: Hash, proof: readonly Hash[], root: Hash): boolean {
  if (!(index >= 0 && index < size)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      [fn, sn] = upToRightChild(fn, sn);
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && sameHash(r, root);
}

/** Whether `proof` shows the tree of `oldSize` with `oldRoot` is a prefix of `newSize`'s with `newRoot` (§2.1.4.2). */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Hash,
  newRoot: Hash,
  proof: readonly Hash[],
): boolean {
  if (oldSize < 1 || oldSize > newSize) return false;
  if (oldSize === newSize) return proof.length === 0 && sameHash(oldRoot, newRoot);
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof];
  const [first, ...rest] = path;
  if (first === undefined) return false;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = first;
  let sr = first;
  for (const c of rest) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      [fn, sn] = upToRightChild(fn, sn);
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && sameHash(fr, oldRoot) && sameHash(sr, newRoot);
}
