/**
 * The results log's formats against published vectors: C2SP tlog-tiles paths (the specification's example and the
 * Go `tlog` package's tile paths, without its height element and with `entries` for its `data`), entry bundles,
 * the Go `note` package's signed note and verifier key (Ed25519 signs deterministically, so the same key and text
 * give the published signature byte for byte), the Go `tlog` package's tree-head text (its origin line aside, the
 * C2SP checkpoint body), and the log's own entries in their canonical form.
 */
import { createPrivateKey } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkpointText, originOfIssuer, parseCheckpoint } from "../../src/results-log/core/checkpoint.js";
import { entryBytes, entryText, parseEntry } from "../../src/results-log/core/log-entry.js";
import { leafHash } from "../../src/results-log/core/merkle.js";
import { makeLogKey } from "../../src/results-log/core/sequencer.js";
import {
  keyId,
  openNote,
  parseNote,
  parseVerifierKey,
  signNote,
  verifierKey,
} from "../../src/results-log/core/signed-note.js";
import {
  bundleEntries,
  entryBundle,
  parseTilePath,
  tileIndexPath,
  tilePath,
  tileWidthAt,
} from "../../src/results-log/core/tiles.js";

describe("tile paths (C2SP tlog-tiles)", () => {
  it("writes an index as 3-digit elements, all but the last x-prefixed", () => {
    expect(tileIndexPath(0)).toBe("000");
    expect(tileIndexPath(67)).toBe("067");
    expect(tileIndexPath(1000)).toBe("x001/000");
    expect(tileIndexPath(1234067)).toBe("x001/x234/067");
    expect(tileIndexPath(123456078)).toBe("x123/x456/078");
  });

  const paths: [string, { level: number | "entries"; index: number; width: number }][] = [
    ["tile/0/001", { level: 0, index: 1, width: 256 }],
    ["tile/0/001.p/5", { level: 0, index: 1, width: 5 }],
    ["tile/5/x123/x456/078", { level: 5, index: 123456078, width: 256 }],
    ["tile/5/x123/x456/078.p/2", { level: 5, index: 123456078, width: 2 }],
    ["tile/0/x003/x057/500", { level: 0, index: 3057500, width: 256 }],
    ["tile/entries/x003/x057/500", { level: "entries", index: 3057500, width: 256 }],
    ["tile/entries/000.p/255", { level: "entries", index: 0, width: 255 }],
    ["tile/63/000", { level: 63, index: 0, width: 256 }],
  ];

  it("writes and reads the same paths", () => {
    for (const [path, tile] of paths) {
      expect(tilePath(tile)).toBe(path);
      expect(parseTilePath(path)).toEqual(tile);
    }
  });

  it("reads no other spelling of a tile", () => {
    const refused = [
      "tile/5/123/456/078", // inner elements without x
      "tile/0/x000/067", // a leading group of zeros
      "tile/0/67", // not three digits
      "tile/0/0067",
      "tile/00/067", // a level with a leading zero
      "tile/64/000", // beyond level 63
      "tile/-1/000",
      "tile/data/000", // Go's name; C2SP says entries
      "tile/0/000.p/0", // widths are 1-255
      "tile/0/000.p/256",
      "tile/0/000.p/05",
      "tile/0/000.p",
      "tile/0/x001",
      "tile/0",
      "tiles/0/000",
      "tile/8/0/000", // Go's height element
    ];
    for (const path of refused) expect(parseTilePath(path), path).toBeUndefined();
  });

  it("counts a tile's hashes in a tree as the specification's example does (size 70,000)", () => {
    expect(tileWidthAt(0, 272, 70_000)).toBe(256);
    expect(tileWidthAt(0, 273, 70_000)).toBe(112);
    expect(tileWidthAt(0, 274, 70_000)).toBe(0);
    expect(tileWidthAt(1, 0, 70_000)).toBe(256);
    expect(tileWidthAt(1, 1, 70_000)).toBe(17);
    expect(tileWidthAt(2, 0, 70_000)).toBe(1);
    expect(tileWidthAt(3, 0, 70_000)).toBe(0);
    // A tree of 256: one full level-0 tile and a level-1 tile of width 1.
    expect([tileWidthAt(0, 0, 256), tileWidthAt(1, 0, 256)]).toEqual([256, 1]);
  });

  it("frames an entry bundle as big-endian uint16 lengths, and reads it back", () => {
    const entries = [new Uint8Array(0), new Uint8Array([7]), new Uint8Array(300).fill(9)];
    const bundle = entryBundle(entries);
    expect(Array.from(bundle.subarray(0, 5))).toEqual([0, 0, 0, 1, 7]);
    expect(Array.from(bundle.subarray(5, 7))).toEqual([0x01, 0x2c]);
    expect(bundle.length).toBe(2 + 3 + 302);
    expect(bundleEntries(bundle)).toEqual(entries);
    expect(bundleEntries(bundle.subarray(0, bundle.length - 1))).toBeUndefined();
    expect(() => entryBundle([new Uint8Array(65_536)])).toThrow(RangeError);
  });
});

// golang.org/x/mod/sumdb/note's example key and signed note (note.go's package documentation).
const PETER = {
  vkey: "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
  skey: "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
  text: "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n",
  signature:
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n",
};

describe("signed notes (C2SP signed-note, Ed25519)", () => {
  const key = parseVerifierKey(PETER.vkey);
  const seed = Buffer.from(PETER.skey.split("+").slice(4).join("+"), "base64").subarray(1);
  const privateKey = createPrivateKey({
    key: {
      kty: "OKP",
      crv: "Ed25519",
      d: seed.toString("base64url"),
      x: Buffer.from(key?.publicKey ?? []).toString("base64url"),
    },
    format: "jwk",
  });

  it("reads the published verifier key and computes its key ID", () => {
    expect(key?.name).toBe("PeterNeumann");
    expect(Buffer.from(keyId(key as NonNullable<typeof key>)).toString("hex")).toBe("c74f20a3");
    expect(verifierKey(key as NonNullable<typeof key>)).toBe(PETER.vkey);
  });

  it("signs the published text into the published note, and opens it", () => {
    const note = signNote(PETER.text, key as NonNullable<typeof key>, privateKey);
    expect(note).toBe(`${PETER.text}\n${PETER.signature}`);
    expect(openNote(note, key as NonNullable<typeof key>)).toBe(PETER.text);
  });

  it("reads back every verifier key it writes (base64 with plus signs too)", () => {
    const keys = Array.from({ length: 40 }, () => makeLogKey("casino.example/topwagers"));
    expect(keys.some((k) => verifierKey(k).split("+").length > 3)).toBe(true);
    for (const k of keys) expect(parseVerifierKey(verifierKey(k))).toEqual({ name: k.name, publicKey: k.publicKey });
  });

  it("refuses a note changed by one byte, a wrong key, and malformed verifier keys", () => {
    const note = `${PETER.text}\n${PETER.signature}`;
    const k = key as NonNullable<typeof key>;
    expect(openNote(note.replace("cryptography", "cryptographY"), k)).toBeUndefined();
    expect(openNote(note.replace("x08go", "x08gp"), k)).toBeUndefined();
    expect(openNote(note, { ...k, name: "PeterNeumanN" })).toBeUndefined();
    // Another key's signature is ignored: the note is still open by this one.
    const other = `${note}— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n`;
    expect(parseNote(other)?.signatures.map((s) => s.name)).toEqual(["PeterNeumann", "EnochRoot"]);
    expect(openNote(other, k)).toBe(PETER.text);
    for (const bad of [
      "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", // key ID of another key
      "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", // unknown algorithm
      "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", // a space in the name
      "PeterNeumann+c74f20a3",
    ]) {
      expect(parseVerifierKey(bad), bad).toBeUndefined();
    }
  });
});

describe("checkpoints (C2SP tlog-checkpoint)", () => {
  it("writes origin, size and base64 root, one line each, as the Go tlog package's tree head", () => {
    // tlog's TestFormatTree: RecordHash("hello world") at size 123456789012.
    const root = leafHash(new TextEncoder().encode("hello world"));
    const text = checkpointText({ origin: "go.sum database tree", size: 123456789012, root });
    expect(text).toBe("go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n");
    expect(parseCheckpoint(text)).toEqual({ origin: "go.sum database tree", size: 123456789012, root, extensions: [] });
    expect(parseCheckpoint(`${text}extension\n`)?.extensions).toEqual(["extension"]);
  });

  it("reads no malformed checkpoint", () => {
    const root = "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=";
    for (const bad of [
      `o\n012\n${root}\n`,
      `o\n0x1\n${root}\n`,
      `o\n1\n${root}`,
      `o\n1\n${root}\n\n`,
      "o\n1\nAAAA\n",
    ]) {
      expect(parseCheckpoint(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it("names the log after the issuer", () => {
    expect(originOfIssuer("https://casino.example")).toBe("casino.example/topwagers");
    expect(originOfIssuer("https://casino.example/races/")).toBe("casino.example/races/topwagers");
    expect(originOfIssuer("topwagers")).toBe("topwagers/topwagers");
    expect(originOfIssuer("https://casino example")).toBeUndefined();
    expect(originOfIssuer("https://")).toBeUndefined();
  });
});

describe("the log's entries", () => {
  const final = {
    kind: "final" as const,
    affiliateId: "sb-aff",
    raceId: "race_vrc6jz3qp3fymgyttr77",
    at: 1795756324,
    digest: "a".repeat(64),
    sha256: "b".repeat(64),
  };

  it("are canonical JSON with their fields sorted", () => {
    expect(entryText(final)).toBe(
      `{"affiliateId":"sb-aff","at":1795756324,"digest":"${"a".repeat(64)}","kind":"final",` +
        `"raceId":"race_vrc6jz3qp3fymgyttr77","sha256":"${"b".repeat(64)}","type":"topwagers.log-entry.v1"}`,
    );
    const cancelled = { kind: "cancelled" as const, affiliateId: "ü aff", raceId: "race_x", at: 5 };
    expect(entryText(cancelled)).toBe(
      '{"affiliateId":"ü aff","at":5,"kind":"cancelled","raceId":"race_x","type":"topwagers.log-entry.v1"}',
    );
    expect(parseEntry(entryBytes(final))).toEqual(final);
    expect(parseEntry(entryBytes({ ...final, sha256: null }))).toEqual({ ...final, sha256: null });
    expect(parseEntry(entryBytes(cancelled))).toEqual(cancelled);
  });

  it("are read only in their canonical form", () => {
    const text = entryText(final);
    const encode = (s: string) => new TextEncoder().encode(s);
    expect(parseEntry(encode(text.replace('"at":', ' "at":')))).toBeUndefined();
    expect(parseEntry(encode(text.replace("{", '{"affiliateId":"other",')))).toBeUndefined();
    expect(parseEntry(encode(text.replace('"final"', '"frozen"')))).toBeUndefined();
    expect(parseEntry(encode(text.replace("topwagers.log-entry.v1", "topwagers.log-entry.v2")))).toBeUndefined();
    expect(parseEntry(new Uint8Array([0xff]))).toBeUndefined();
  });
});
