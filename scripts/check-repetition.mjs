#!/usr/bin/env node
// `npm run check-repetition`: fails when jscpd (configured in .jscpd.json: src/ and bench/, 6 lines and 40 tokens
// or more) finds a repeated piece between two files that scripts/repetition-allowed.json does not list with its
// reason (files named from the repository's root). A listed pair that no longer repeats is reported so the entry
// can go.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const allowed = JSON.parse(readFileSync(join(root, "scripts/repetition-allowed.json"), "utf8"));
const pairKey = (a, b) => [a, b].sort().join(" ~ ");

for (const entry of allowed) {
  if (!Array.isArray(entry.files) || entry.files.length !== 2 || typeof entry.reason !== "string" || !entry.reason) {
    console.error(`scripts/repetition-allowed.json: each entry needs two files and a reason: ${JSON.stringify(entry)}`);
    process.exit(2);
  }
}
const allowedKeys = new Map(allowed.map((entry) => [pairKey(...entry.files), entry.reason]));

const out = mkdtempSync(join(tmpdir(), "repetition-"));
try {
  const run = spawnSync(
    join(root, "node_modules/.bin/jscpd"),
    ["--config", ".jscpd.json", "--absolute", "--output", out],
    {
      cwd: root,
      encoding: "utf8",
    },
  );
  if (run.status !== 0) {
    console.error(`jscpd failed (exit ${run.status}):\n${run.stdout}${run.stderr}`);
    process.exit(2);
  }
  const { duplicates } = JSON.parse(readFileSync(join(out, "jscpd-report.json"), "utf8"));
  const seen = new Set();
  const refused = [];
  const named = (file) => relative(root, file.name);
  for (const clone of duplicates) {
    const key = pairKey(named(clone.firstFile), named(clone.secondFile));
    seen.add(key);
    if (allowedKeys.has(key)) continue;
    refused.push(
      `  ${named(clone.firstFile)}:${clone.firstFile.start}-${clone.firstFile.end} ~ ` +
        `${named(clone.secondFile)}:${clone.secondFile.start}-${clone.secondFile.end} (${clone.lines} lines)`,
    );
  }
  for (const key of allowedKeys.keys()) {
    if (!seen.has(key))
      console.log(`repetition check: ${key} no longer repeats; its entry in scripts/repetition-allowed.json can go`);
  }
  if (refused.length > 0) {
    console.error(
      `repetition check: ${refused.length} repeated piece(s) of src/ or bench/ (give each one home, or list the pair in ` +
        `scripts/repetition-allowed.json with the reason the two places must stay apart):\n${refused.join("\n")}`,
    );
    process.exit(1);
  }
  console.log(
    `repetition check: no repeated piece of src/ or bench/ outside scripts/repetition-allowed.json (${duplicates.length} found, each in a listed pair)`,
  );
} finally {
  rmSync(out, { recursive: true, force: true });
}
