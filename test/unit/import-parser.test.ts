/**
 * The import reader (src/cli/import-file.ts) on the reference model: JSON Lines and CSV, both
 * spellings of the keys, weights, voids before and after their wager, quoted CSV fields, and bad
 * lines reported by number while the rest goes on; the board after it, with exact totals. Files in
 * a temporary folder; no database.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { importFile } from "../../src/cli/import-file.js";
import { splitCsv } from "../../src/ingest/core/import-formats.js";
import { WagerIngest } from "../../src/ingest/core/wager-ingest.js";
import { ReferenceModel } from "../support/reference-model.js";

const JAN_1 = 1767225600; // 2026-01-01T00:00:00Z
const NOW = JAN_1 + 86_400;
const folder = mkdtempSync(join(tmpdir(), "tw-import-unit-"));

afterAll(() => rmSync(folder, { recursive: true, force: true }));

function file(name: string, lines: readonly string[]): string {
  const path = join(folder, name);
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

/** Imports onto the model (a fresh one by default); returns the report, the bad lines and the affiliate's board. */
async function imported(path: string, model = new ReferenceModel({ now: () => NOW }), affiliate = "aff-i") {
  const bad: [number, string][] = [];
  const report = await importFile(new WagerIngest(model.ingest, { now: () => NOW }), path, {
    now: () => NOW,
    onBadLine: (line, problem) => bad.push([line, problem]),
  });
  const key = model.affiliateKey(affiliate);
  const board = key === undefined ? [] : await model.standings.topUsers(key, JAN_1, NOW, 100, "weighted");
  return { report, bad, board: board.map((r) => [r.userExternalId, r.total, r.weightedTotal]) };
}

describe("splitCsv", () => {
  it("splits on commas, reads quoted fields with doubled quotes, keeps empty fields", () => {
    expect(splitCsv('a,"b,c","d""e",,"f"')).toEqual(["a", "b,c", 'd"e', "", "f"]);
    expect(splitCsv("")).toEqual([""]);
    expect(splitCsv("x,")).toEqual(["x", ""]);
  });

  it("names an unclosed quote and text after a quoted field", () => {
    expect(splitCsv('a,"b')).toBe("a quoted field is not closed on this line");
    expect(splitCsv('"a"b,c')).toBe("unexpected text after a quoted field");
  });
});

describe("importFile", () => {
  it("reads JSON Lines in both spellings with weights and voids, skipping bad lines by number", async () => {
    const path = file("mixed.jsonl", [
      '{"type":"void","id":"w-early"}',
      '{"type":"user","id":"u1","affiliateId":"aff-i","username":"alice","avatar":""}',
      '{"type":"user","id":"u2","affiliate_id":"aff-i","username":"bob","avatar":""}',
      `{"type":"wager","id":"w1","userId":"u1","amount":"10.5","placedAt":${JAN_1},"weightBps":5000}`,
      `{"type":"wager","id":"w2","user_id":"u2","amount":"3","placed_at":${JAN_1 + 1},"weight_bps":"100"}`,
      `{"type":"wager","id":"w-early","userId":"u2","amount":"99","placedAt":${JAN_1 + 2}}`,
      `{"type":"wager","id":"w3","userId":"u1","amount":"0.00000001","placedAt":${JAN_1 + 3}}`,
      '{"type":"void","id":"w3"}',
      "{not json",
      `{"type":"wager","id":"w4","userId":"nobody","amount":"1","placedAt":${JAN_1}}`,
      "",
      `{"type":"wager","id":"w1","userId":"u1","amount":"10.50","placedAt":${JAN_1},"weightBps":5000}`,
    ]);
    const { report, bad, board } = await imported(path);
    expect(report).toEqual({
      format: "jsonl",
      lines: 12,
      users: 2,
      recorded: 4, // w1, w2, w-early, w3
      duplicates: 1, // w1 again, the same amount written otherwise
      voided: 2, // voids go after the wagers of their batch: w-early and w3 are recorded when they apply
      alreadyVoided: 0,
      pendingVoids: 0,
      badLines: 2,
    });
    expect(bad.map(([line]) => line)).toEqual([9, 10]);
    expect(bad[0]?.[1]).toMatch(/^not valid JSON \(/);
    expect(bad[1]?.[1]).toContain('"nobody"');
    // alice: 10.5 × 0.5 = 5.25; bob: 3 × 0.01 = 0.03 (w-early never counts, w3 was voided)
    expect(board).toEqual([
      ["u1", "10.5", "5.25"],
      ["u2", "3", "0.03"],
    ]);
  });

  it("reads CSV with a type column, columns in any order, quoted fields and an empty weight", async () => {
    const path = file("mixed.csv", [
      "placed_at,type,amount,id,userId,affiliateId,username,avatar,weight_bps",
      ',user,,u1,,aff-i,"smith, jane",,',
      ',user,,u2,,aff-i,"the ""boss""",https://img.example.test/b.png,',
      `${JAN_1},wager,2.5,w1,u1,,,,`,
      `${JAN_1 + 60},wager,2.5,w2,u2,,,,2500`,
      `${JAN_1 + 61},wager,1,w3,u2,,,,`,
      ",void,,w3,,,,,",
      `${JAN_1},wager,"2.5",w9,u1,,,`,
    ]);
    const { report, bad, board } = await imported(path);
    expect(report).toMatchObject({ format: "csv", lines: 8, users: 2, recorded: 3, voided: 1, badLines: 1 });
    expect(bad).toEqual([[8, "expected 9 fields, found 8"]]);
    // smith, jane: 2.5 fully; "the boss": 2.5 × 0.25 = 0.625 (w3 voided)
    expect(board).toEqual([
      ["u1", "2.5", "2.5"],
      ["u2", "2.5", "0.625"],
    ]);
  });

  it("remembers a void whose wager comes in a later file: recorded then, never counted", async () => {
    const model = new ReferenceModel({ now: () => NOW });
    const first = await imported(file("voids.jsonl", ['{"type":"void","id":"w-late"}']), model);
    expect(first.report).toMatchObject({ voided: 0, alreadyVoided: 0, pendingVoids: 1, badLines: 0 });
    const second = await imported(
      file("later.jsonl", [
        '{"type":"user","id":"u1","affiliateId":"aff-i","username":"alice","avatar":""}',
        `{"type":"wager","id":"w-late","userId":"u1","amount":"5","placedAt":${JAN_1}}`,
        `{"type":"wager","id":"w-kept","userId":"u1","amount":"0.1","placedAt":${JAN_1}}`,
        '{"type":"void","id":"w-late"}',
      ]),
      model,
    );
    expect(second.report).toMatchObject({ recorded: 2, duplicates: 0, voided: 0, alreadyVoided: 1, pendingVoids: 0 });
    expect(second.board).toEqual([["u1", "0.1", "0.1"]]);
  });
});
