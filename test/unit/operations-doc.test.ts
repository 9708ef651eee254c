/**
 * What docs/operations.md and README.md say about tables, releases and the package, held to the code (issue 47,
 * item 5): Backups names every table the migrations and the migration runner create (computed here from their
 * statements); Upgrading links every release's notes in CHANGELOG.md; the Version safety example names a migration
 * that really raises the floor to the release it names; the package file is named after package.json's version.
 * Reads files only; no server.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";

const OPERATIONS = readFileSync("docs/operations.md", "utf8");
const README = readFileSync("README.md", "utf8");
const CHANGELOG = readFileSync("CHANGELOG.md", "utf8");
const VERSION = (JSON.parse(readFileSync("package.json", "utf8")) as { version: string }).version;

/** The text of `doc` from the heading `from` to the next heading of the same level. */
function section(doc: string, from: string): string {
  const start = doc.indexOf(`\n${from}\n`);
  expect(start).toBeGreaterThan(-1);
  const level = from.split(" ")[0] as string;
  const rest = doc.slice(start + from.length + 2);
  const next = rest.search(new RegExp(`^#{1,${level.length}} `, "m"));
  return next === -1 ? rest : rest.slice(0, next);
}

const CREATES = /CREATE TABLE (?:IF NOT EXISTS )?`?([a-z_]+)`?/g;

/** Every table the migrations create (their SQL as written) and every one src/ creates by a literal name. */
function tablesCreated(): string[] {
  const names = new Set<string>();
  for (const migration of MIGRATIONS) {
    for (const step of migration.statements) {
      if (typeof step === "string") for (const m of step.matchAll(CREATES)) names.add(m[1] as string);
    }
  }
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const file = path.join(dir, name);
      return statSync(file).isDirectory() ? walk(file) : file.endsWith(".ts") ? [file] : [];
    });
  for (const file of walk("src")) {
    for (const m of readFileSync(file, "utf8").matchAll(CREATES)) names.add(m[1] as string);
  }
  return [...names].sort();
}

describe("docs/operations.md against the code", () => {
  it("Backups names every table the migrations and the runner create", () => {
    const tables = tablesCreated();
    // The statements are read as written: the totals tables come from their helper, the runner's from src/.
    expect(tables).toEqual(expect.arrayContaining(["wager_halfmonthly", "schema_migration_lease", "pruned_wagers"]));
    expect(tables.length).toBeGreaterThanOrEqual(28);
    const backups = section(OPERATIONS, "## Backups");
    expect(tables.filter((table) => !backups.includes(`\`${table}\``))).toEqual([]);
  });

  it("Upgrading links the notes of every release after the first, each to its CHANGELOG heading", () => {
    const releases = [...CHANGELOG.matchAll(/^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$/gm)].map((m) => ({
      version: m[1] as string,
      anchor: `${(m[1] as string).replaceAll(".", "")}---${m[2]}`,
    }));
    expect(releases.map((r) => r.version)).toContain("0.4.0");
    const upgrading = section(OPERATIONS, "### Upgrading");
    const linked = [...upgrading.matchAll(/\[(\d+\.\d+\.\d+)\]\(\.\.\/CHANGELOG\.md#([^)]+)\)/g)].map((m) => ({
      version: m[1] as string,
      anchor: m[2] as string,
    }));
    const first = releases.at(-1)?.version;
    expect(linked).toEqual(releases.filter((r) => r.version !== first));
  });

  it("the Version safety example names a migration that raises the floor to the release it names", () => {
    const example = section(OPERATIONS, "### Version safety").match(
      /allows\s+\((\d+\.\d+\.\d+), set by migration\s+(\d+)\): run (\d+\.\d+\.\d+) or newer/,
    );
    expect(example).not.toBeNull();
    const [, floor, version, run] = example as RegExpMatchArray;
    expect(run).toBe(floor);
    // Migration 17 (retention horizons) raises the floor from the first pruning run, to the release that pruned.
    const raising = MIGRATIONS.filter((m) => m.oldestRelease !== undefined).map(
      (m) => `${m.version}:${m.oldestRelease}`,
    );
    expect([...raising, "17:0.4.0"]).toContain(`${version}:${floor}`);
  });

  it("the package file is named after package.json's version wherever the docs name it", () => {
    const named = [...`${README}\n${OPERATIONS}`.matchAll(/topwagers-(\d+\.\d+\.\d+)\.tgz/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set([VERSION]));
  });
});
