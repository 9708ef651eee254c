/**
 * CHANGELOG.md covers what operators upgrade through: every schema migration by its number, the version
 * package.json names as a release of its own, and an Unreleased section for what comes next. (That a change to the
 * migrations or protos brings a changelog line is checked on git's history by scripts/check-changelog.sh.)
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/schema/schema-migrations.js";

const changelog = readFileSync("CHANGELOG.md", "utf8");
const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };

describe("CHANGELOG.md", () => {
  it("names every schema migration by its number", () => {
    const missing = MIGRATIONS.filter((m) => !new RegExp(`\\bmigration ${m.version}\\b`).test(changelog));
    expect(missing.map((m) => `${m.version} (${m.name})`)).toEqual([]);
  });

  it("has an Unreleased section first and a dated section for package.json's version", () => {
    const headings = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => m[1]);
    expect(headings[0]).toBe("Unreleased");
    expect(changelog).toMatch(new RegExp(`^## \\[${version.replaceAll(".", "\\.")}\\] - \\d{4}-\\d{2}-\\d{2}$`, "m"));
  });

  it("lists releases newest first, each once", () => {
    const released = [...changelog.matchAll(/^## \[(\d+)\.(\d+)\.(\d+)\]/gm)].map((m): [number, number, number] => [
      Number(m[1]),
      Number(m[2]),
      Number(m[3]),
    ]);
    const sorted = [...released].sort((a, b) => b[0] - a[0] || b[1] - a[1] || b[2] - a[2]);
    expect(released).toEqual(sorted);
    expect(new Set(released.map((r) => r.join("."))).size).toBe(released.length);
  });
});
