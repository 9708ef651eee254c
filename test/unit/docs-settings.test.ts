/**
 * The docs say what the product does with its settings (issue 20, item 10; issue 47, item 5): the config's list
 * (SETTINGS, src/platform/config.ts) is exactly what loadConfig reads; README's Configuration table and
 * docs/operations.md's Settings table each list exactly that list (operations.md also the CLI's
 * PROGRESS_INTERVAL_S); the read pool's replicas are a setting (DATABASE_READ_URL), not "not yet a setting".
 * Reads the docs only; no server.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PROGRESS_SETTING } from "../../src/cli/progress.js";
import { loadConfig, SETTINGS } from "../../src/platform/config.js";

const OPERATIONS = readFileSync("docs/operations.md", "utf8");
const README = readFileSync("README.md", "utf8");

/**
 * The variables loadConfig reads, seen through an environment that records every name asked for; set
 * values open the settings read only beside another one (METRICS_HOST with METRICS_PORT).
 */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  for (const values of [{}, { METRICS_PORT: "9100" }] as Record<string, string>[]) {
    const env = new Proxy({} as Record<string, string | undefined>, {
      get(_target, name) {
        if (typeof name !== "string") return undefined;
        read.add(name);
        return values[name];
      },
    });
    loadConfig(env);
  }
  return read;
}

/** The variables of a table's first column in `doc` between two headings (a cell may name two: `A` / `B`). */
function tableVariables(doc: string, from: string, to: string): string[] {
  const section = doc.slice(doc.indexOf(from), doc.indexOf(to));
  return [...section.matchAll(/^\| (`[A-Z][A-Z0-9_]+`(?: \/ `[A-Z][A-Z0-9_]+`)*)/gm)].flatMap((m) =>
    [...(m[1] as string).matchAll(/`([A-Z0-9_]+)`/g)].map((v) => v[1] as string),
  );
}

const sorted = (names: Iterable<string>) => [...names].sort();

describe("the settings tables and the config", () => {
  it("the config's list is exactly what loadConfig reads", () => {
    expect(sorted(variablesRead())).toEqual(sorted(SETTINGS));
    expect(new Set(SETTINGS).size).toBe(SETTINGS.length);
  });

  it("README's Configuration table lists every setting of the config's list, once, and nothing else", () => {
    const table = tableVariables(README, "\n## Configuration\n", "\n## Keys\n");
    expect(sorted(table)).toEqual(sorted(SETTINGS));
  });

  it("docs/operations.md's Settings table lists the config's list and the CLI's progress setting, once each", () => {
    const table = tableVariables(OPERATIONS, "\n## Settings\n", "\n## Health and readiness");
    expect(sorted(table)).toEqual(sorted([...SETTINGS, PROGRESS_SETTING]));
  });
  it("the read replicas of the read path are a setting: scaling out names DATABASE_READ_URL", () => {
    const scaling = OPERATIONS.slice(OPERATIONS.indexOf("**MySQL primary with read replicas.**"));
    const paragraph = scaling.slice(0, scaling.indexOf("\n\n"));
    expect(paragraph).toContain("`DATABASE_READ_URL`");
    expect(OPERATIONS).not.toMatch(/not yet a setting/);
  });
});
