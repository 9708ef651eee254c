/**
 * The results log's core against a second implementation: the Go checksum database's packages
 * (golang.org/x/mod/sumdb/note and tlog, Debian's, offline), through test/support/go/tlogcheck.go. A log of 600
 * entries made by our sequencer (two checkpoints: 100, then 600) is laid out as its URLs in a directory; Go opens
 * the checkpoint with the verifier key, recomputes the root from the tiles, checks every entry's leaf hash and
 * inclusion proof, rebuilds every tile from the entries with tlog and compares them byte for byte, proves the
 * checkpoint of 100 a prefix of 600, and checks our inclusion proofs. One byte altered in a tile, a bundle, the
 * checkpoint or a proof fails.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogReader } from "../../src/results-log/core/log-reader.js";
import { Sequencer } from "../../src/results-log/core/sequencer.js";
import { parseTilePath } from "../../src/results-log/core/tiles.js";
import { MemoryLogStore } from "../support/results-log-model.js";
import { buildTlogcheck, mirrorLog, run } from "../support/tlogcheck.js";

const ORIGIN = "casino.example/topwagers";
const entry = (i: number) => `{"i":${i},"race":"race_${String(i).padStart(4, "0")}"}`;

describe("the log as Go's sumdb/note and sumdb/tlog read it", () => {
  const dir = mkdtempSync(join(tmpdir(), "results-log-go-"));
  const logDir = join(dir, "log");
  const store = new MemoryLogStore();
  let tlogcheck = "";
  let vkey = "";
  let oldNote = "";
  const reader = new LogReader(store, () => 0);

  beforeAll(async () => {
    const sequencer = new Sequencer(store, { origin: ORIGIN, onKeyMade: (made) => (vkey = made) });
    for (let i = 0; i < 100; i++) store.append(`race_${i}`, new TextEncoder().encode(entry(i)));
    oldNote = (await sequencer.run())?.note ?? "";
    for (let i = 100; i < 600; i++) store.append(`race_${i}`, new TextEncoder().encode(entry(i)));
    await sequencer.run();
    await mirrorLog(logDir, 600, async (path) => {
      if (path === "checkpoint") return (await store.latestCheckpoint())?.note ?? "";
      return (await reader.tile(parseTilePath(path) ?? { level: 0, index: -1, width: 0 })) ?? new Uint8Array();
    });
    writeFileSync(join(dir, "old-checkpoint"), oldNote);
    tlogcheck = await buildTlogcheck(join(dir, "go"));
  }, 120_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("opens the checkpoint, and checks every entry and every tile", async () => {
    const checked = await run(tlogcheck, ["log", logDir, vkey]);
    expect(checked.stderr).toBe("");
    expect(checked.code).toBe(0);
    const lines = checked.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    const root = Buffer.from((await store.latestCheckpoint())?.root ?? []).toString("base64");
    expect(lines[0]).toEqual({ size: 600, root });
    expect(lines.slice(1)).toEqual(Array.from({ length: 600 }, (_, i) => ({ index: i, entry: entry(i) })));
  });

  it("proves the checkpoint of 100 a prefix of the checkpoint of 600", async () => {
    const checked = await run(tlogcheck, ["consistency", logDir, vkey, join(dir, "old-checkpoint")]);
    expect(checked).toEqual({ code: 0, stdout: "consistent 100 -> 600\n", stderr: "" });
  });

  it("checks the inclusion proofs the answers carry (each against the first checkpoint holding its entry)", async () => {
    for (const [index, size] of [
      [0, 100],
      [99, 100],
      [100, 600],
      [511, 600],
      [599, 600],
    ] as const) {
      const inclusion = await reader.inclusionOf(`race_${index}`);
      const file = join(dir, `answer-${index}.json`);
      writeFileSync(file, JSON.stringify({ jws: "…", log: inclusion }));
      const checked = await run(tlogcheck, ["inclusion", vkey, file]);
      expect(checked).toEqual({ code: 0, stdout: `entry ${index} of ${size} in ${ORIGIN}\n`, stderr: "" });
    }
  });

  /** Runs `check` with one byte of `file` (under the log's directory) flipped, then puts it back. */
  async function withFlippedByte(file: string, at: number, check: () => Promise<void>): Promise<void> {
    const path = join(logDir, file);
    const original = readFileSync(path);
    const changed = Buffer.from(original);
    changed[at] = (changed[at] as number) ^ 0x01;
    writeFileSync(path, changed);
    try {
      await check();
    } finally {
      writeFileSync(path, original);
    }
  }

  it("fails when one byte of a tile, an entry bundle or the checkpoint is altered", async () => {
    const tile = /tree of 600|not the leaf hash|inclusion proof|tile/;
    const cases: [string, number, RegExp][] = [
      ["tile/0/000", 100, tile],
      ["tile/0/002.p/88", 40, tile],
      ["tile/1/000.p/2", 5, tile],
      ["tile/entries/001", 300, /entry|bundle/],
      ["checkpoint", 30, /checkpoint/],
      ["checkpoint", 130, /checkpoint/],
    ];
    for (const [file, at, reason] of cases) {
      await withFlippedByte(file, at, async () => {
        const checked = await run(tlogcheck, ["log", logDir, vkey]);
        expect(checked.code, file).toBe(1);
        expect(checked.stderr, file).toMatch(reason);
      });
    }
    expect((await run(tlogcheck, ["log", logDir, vkey])).code).toBe(0);
  });

  it("fails when a proof hash, the entry or the checkpoint of an answer is altered", async () => {
    const inclusion = await reader.inclusionOf("race_300");
    const proof = [...(inclusion?.proof ?? [])];
    proof[3] = Buffer.from(Buffer.from(proof[3] as string, "base64").map((b, i) => (i === 0 ? b ^ 1 : b))).toString(
      "base64",
    );
    const changed = [
      { ...inclusion, proof },
      { ...inclusion, entry: (inclusion?.entry ?? "").replace("300", "301") },
      { ...inclusion, index: 301 },
      { ...inclusion, checkpoint: (inclusion?.checkpoint ?? "").replace("\n600\n", "\n601\n") },
    ];
    for (const log of changed) {
      const file = join(dir, "answer-changed.json");
      writeFileSync(file, JSON.stringify({ log }));
      const checked = await run(tlogcheck, ["inclusion", vkey, file]);
      expect(checked.code).toBe(1);
    }
  });
});
