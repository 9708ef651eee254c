/**
 * docs/api.md's table of error reasons is the error catalogue (issue 52, item 4): every reason of
 * src/platform/errors/catalogue.ts is a row, with the code the catalogue gives it, and every row is a reason there; the
 * reasons the page says carry RetryInfo are the rows that say so. Reads the docs only; no server.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CATALOGUE } from "../../src/platform/errors/catalogue.js";
import { codeName } from "../../src/platform/errors/http-status.js";

const API_MD = readFileSync("docs/api.md", "utf8");

/** The rows of the "Error reasons" table: reason, code and the details column. */
function reasonRows(): { reason: string; code: string; details: string }[] {
  const section = API_MD.slice(API_MD.indexOf("\n#### Error reasons\n"));
  const table = section.slice(section.indexOf("\n| reason"), section.indexOf("\n\n", section.indexOf("\n| reason")));
  return [...table.matchAll(/^\| `([A-Z_]+)` +\| `([a-z_]+)` +\|[^|]*\|([^|]*)\|$/gm)].map((m) => ({
    reason: m[1] as string,
    code: m[2] as string,
    details: (m[3] as string).trim(),
  }));
}

describe("docs/api.md's error reasons", () => {
  it("list every reason of the catalogue once, with its code, and nothing else", () => {
    const rows = reasonRows();
    expect(rows.length).toBe(Object.keys(CATALOGUE).length);
    expect(rows.map((r) => r.reason).sort()).toEqual(Object.keys(CATALOGUE).sort());
    expect(Object.fromEntries(rows.map((r) => [r.reason, r.code]))).toEqual(
      Object.fromEntries(Object.entries(CATALOGUE).map(([reason, code]) => [reason, codeName(code)])),
    );
  });

  it("name SHUTTING_DOWN and UNKNOWN_SERVICE with their codes", () => {
    const rows = new Map(reasonRows().map((r) => [r.reason, r.code]));
    expect([rows.get("SHUTTING_DOWN"), rows.get("UNKNOWN_SERVICE")]).toEqual(["unavailable", "not_found"]);
  });

  it("say RetryInfo for exactly the reasons the RetryInfo item lists", () => {
    const item = API_MD.slice(API_MD.indexOf("- `google.rpc.RetryInfo` when waiting helps"));
    const listed = [...item.slice(0, item.indexOf("\n- ")).matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]);
    const rows = reasonRows()
      .filter((r) => r.details.includes("RetryInfo"))
      .map((r) => r.reason);
    expect(listed.length).toBe(7);
    expect(rows.sort()).toEqual([...listed].sort());
  });
});
