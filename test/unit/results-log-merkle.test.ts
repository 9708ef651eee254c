/**
 * The results log's Merkle tree against published vectors: the RFC 6962 reference tree of eight leaves (the roots
 * of every size, the inclusion and consistency proofs Certificate Transparency's and the Go `tlog` package's tests
 * use), and, for every tree up to 70 leaves, every inclusion and consistency proof made here checked by the RFC 9162
 * verifiers and refused once any hash or size is changed.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  consistencyProof,
  EMPTY_ROOT,
  type Hash,
  inclusionProof,
  leafHash,
  nodeHash,
  rootOf,
  type SubtreeReader,
  verifyConsistency,
  verifyInclusion,
} from "../../src/results-log/core/merkle.js";

const hex = (hash: Uint8Array) => Buffer.from(hash).toString("hex");
const unhex = (text: string) => new Uint8Array(Buffer.from(text, "hex"));

// RFC 6962's reference leaves and roots (as in certificate-transparency's merkle tree tests).
const LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map(
  unhex,
);
const ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];
// Inclusion proofs of the reference tree: leaf index (0-based), tree size, the proof.
const INCLUSIONS: [number, number, string[]][] = [
  [
    0,
    8,
    [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  ],
  [
    5,
    8,
    [
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  ],
  [2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]],
  [
    1,
    5,
    [
      "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  ],
];
// Consistency proofs of the reference tree: old size, new size, the proof.
const CONSISTENCIES: [number, number, string[]][] = [
  [1, 1, []],
  [
    1,
    8,
    [
      "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
  ],
  [
    6,
    8,
    [
      "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ],
  ],
  [
    2,
    5,
    [
      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ],
  ],
];

/** Complete subtrees of `leaves` computed the naive way (every level hashed from the leaves). */
function naiveReader(leaves: readonly Hash[]): SubtreeReader {
  return (level, index) => {
    let layer = leaves.slice(index * 2 ** level, (index + 1) * 2 ** level);
    while (layer.length > 1) layer = layer.flatMap((h, i) => (i % 2 === 0 ? [nodeHash(h, layer[i + 1] as Hash)] : []));
    return layer[0] as Hash;
  };
}

const flip = (hash: Hash) => {
  const out = new Uint8Array(hash);
  out[0] = (out[0] as number) ^ 1;
  return out;
};

describe("the RFC 6962 reference tree", () => {
  const hashes = LEAVES.map(leafHash);

  it("has the published root at every size, the empty tree's SHA-256 of nothing", () => {
    expect(hex(EMPTY_ROOT)).toBe(createHash("sha256").digest("hex"));
    for (let n = 0; n <= 8; n++) expect(hex(rootOf(hashes.slice(0, n)))).toBe(ROOTS[n]);
  });

  it("gives the published inclusion proofs, which verify", () => {
    for (const [index, size, expected] of INCLUSIONS) {
      const proof = inclusionProof(size, index, naiveReader(hashes.slice(0, size)));
      expect(proof.map(hex)).toEqual(expected);
      const root = unhex(ROOTS[size] as string);
      expect(verifyInclusion(index, size, hashes[index] as Hash, proof, root)).toBe(true);
      expect(verifyInclusion(index, size, hashes[index] as Hash, proof, EMPTY_ROOT)).toBe(false);
    }
  });

  it("gives the published consistency proofs, which verify", () => {
    for (const [from, to, expected] of CONSISTENCIES) {
      const proof = consistencyProof(from, to, naiveReader(hashes.slice(0, to)));
      expect(proof.map(hex)).toEqual(expected);
      const [oldRoot, newRoot] = [unhex(ROOTS[from] as string), unhex(ROOTS[to] as string)];
      expect(verifyConsistency(from, to, oldRoot, newRoot, proof)).toBe(true);
      if (from !== to) expect(verifyConsistency(from, to, flip(oldRoot), newRoot, proof)).toBe(false);
    }
  });
});

describe("every proof of every tree up to 70 leaves", () => {
  const leaves = Array.from({ length: 70 }, (_, i) => leafHash(new TextEncoder().encode(`leaf ${i}`)));
  const roots = Array.from({ length: 71 }, (_, n) => rootOf(leaves.slice(0, n)));
  const read = naiveReader(leaves);

  it("proves each leaf's inclusion, and a changed hash, index or size is refused", () => {
    for (let size = 1; size <= 70; size++) {
      const root = roots[size] as Hash;
      for (let index = 0; index < size; index++) {
        const leaf = leaves[index] as Hash;
        const proof = inclusionProof(size, index, read);
        expect(verifyInclusion(index, size, leaf, proof, root)).toBe(true);
        expect(verifyInclusion(index, size, flip(leaf), proof, root)).toBe(false);
        for (let k = 0; k < proof.length; k++) {
          const changed = proof.map((h, i) => (i === k ? flip(h) : h));
          expect(verifyInclusion(index, size, leaf, changed, root)).toBe(false);
        }
        if (size > 1) expect(verifyInclusion((index + 1) % size, size, leaf, proof, root)).toBe(false);
        // A size and its root are signed together: the proof does not hold for the next tree.
        if (size < 70) expect(verifyInclusion(index, size + 1, leaf, proof, roots[size + 1] as Hash)).toBe(false);
        expect(verifyInclusion(index, size, leaf, [...proof, root], root)).toBe(false);
      }
    }
  });

  it("proves each smaller tree a prefix of each larger, and a changed hash or root is refused", () => {
    for (let to = 1; to <= 70; to++) {
      for (let from = 1; from <= to; from++) {
        const proof = consistencyProof(from, to, read);
        const [oldRoot, newRoot] = [roots[from] as Hash, roots[to] as Hash];
        expect(verifyConsistency(from, to, oldRoot, newRoot, proof)).toBe(true);
        if (from === to) continue;
        expect(verifyConsistency(from, to, flip(oldRoot), newRoot, proof)).toBe(false);
        expect(verifyConsistency(from, to, oldRoot, flip(newRoot), proof)).toBe(false);
        for (let k = 0; k < proof.length; k++) {
          const changed = proof.map((h, i) => (i === k ? flip(h) : h));
          expect(verifyConsistency(from, to, oldRoot, newRoot, changed)).toBe(false);
        }
        if (from > 1) expect(verifyConsistency(from - 1, to, oldRoot, newRoot, proof)).toBe(false);
      }
    }
  });
});
