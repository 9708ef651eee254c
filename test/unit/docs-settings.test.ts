/**
 * docs/operations.md says what the product does with its settings (issue 20, item 10): every variable the
 * settings loader reads is in the Settings table and every row there is read; the read pool's replicas are
 * a setting (DATABASE_READ_URL), not "not yet a setting". Reads the docs only; no server.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/platform/config.js";

const OPERATIONS = readFileSync("docs/operations.md", "utf8");

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

/** The rows of the Settings section's table: the variable of each. */
function settingsTable(): Set<string> {
  const section = OPERATIONS.slice(
    OPERATIONS.indexOf("\n## Settings\n"),
    OPERATIONS.indexOf("\n## Health and readiness"),
  );
  const names = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1] as string);
  return new Set(names);
}

describe("docs/operations.md and the settings", () => {
  it("every variable the settings loader reads is in the Settings table, and every row there is read", () => {
    const read = variablesRead();
    const table = settingsTable();
    expect(read.size).toBeGreaterThan(20);
    // OTEL_SDK_DISABLED belongs to OpenTelemetry's own variables, documented with tracing.
    const documentedElsewhere = new Set(["OTEL_SDK_DISABLED"]);
    expect([...read].filter((name) => !table.has(name) && !documentedElsewhere.has(name)).sort()).toEqual([]);
    expect([...table].filter((name) => !read.has(name)).sort()).toEqual([]);
    for (const name of documentedElsewhere) expect(OPERATIONS).toContain(`\`${name}`);
  });

  it("the read replicas of the read path are a setting: scaling out names DATABASE_READ_URL", () => {
    const scaling = OPERATIONS.slice(OPERATIONS.indexOf("**MySQL primary with read replicas.**"));
    const paragraph = scaling.slice(0, scaling.indexOf("\n\n"));
    expect(paragraph).toContain("`DATABASE_READ_URL`");
    expect(OPERATIONS).not.toMatch(/not yet a setting/);
  });
});
