/**
 * The keys CLI's text (issue 20 item 5): `keys list` prints aligned columns under
 * a header (no two values run together), `keys create --help` names every option
 * the command takes, and the origin rules of publishable keys.
 */
import { describe, expect, it } from "vitest";
import { alignColumns } from "../../src/cli/columns.js";
import { usageFor } from "../../src/cli/usage.js";
import { originProblems } from "../../src/keys/core/key-admin.js";

describe("keys list columns", () => {
  it("pads every column to its widest cell, two spaces apart, the last one unpadded", () => {
    const text = alignColumns([
      ["ID", "AFFILIATE", "STATUS", "LABEL"],
      ["key_1", "aff-typo-doesnotexist", "active", "site"],
      ["key_22", "a", "revoked", ""],
    ]);
    expect(text).toBe(
      "ID      AFFILIATE              STATUS   LABEL\n" +
        "key_1   aff-typo-doesnotexist  active   site\n" +
        "key_22  a                      revoked\n",
    );
  });

  it("counts characters, not UTF-16 units, so emoji labels and affiliates stay aligned", () => {
    expect(
      alignColumns([
        ["A", "B"],
        ["😀x", "1"],
        ["yy", "2"],
      ]),
    ).toBe("A   B\n😀x  1\nyy  2\n");
  });
});

describe("keys create --help", () => {
  it("lists every option", () => {
    const help = usageFor(["keys", "create"]);
    for (const option of [
      "--affiliate",
      "--label",
      "--rate-limit",
      "--expires-in",
      "--publishable",
      "--origin",
      "--json",
    ]) {
      expect(help).toMatch(new RegExp(`\\n {2}${option} `));
    }
  });
});

describe("allowed origins", () => {
  it("takes exact http(s) origins with an optional port", () => {
    expect(originProblems(true, ["https://board.example.com", "http://localhost:5173", "https://[::1]:8443"])).toEqual(
      [],
    );
    expect(originProblems(false, [])).toEqual([]);
  });

  it("names each bad origin by its index", () => {
    expect(originProblems(true, ["https://Board.Example.com", "https://a.example/", "https://a.example:443"])).toEqual([
      {
        field: "allowedOrigins[0]",
        message:
          '"https://Board.Example.com" is not an exact origin; write it as https://board.example.com (no path, query, user or default port, host in lower case)',
      },
      {
        field: "allowedOrigins[1]",
        message:
          '"https://a.example/" is not an exact origin; write it as https://a.example (no path, query, user or default port, host in lower case)',
      },
      {
        field: "allowedOrigins[2]",
        message:
          '"https://a.example:443" is not an exact origin; write it as https://a.example (no path, query, user or default port, host in lower case)',
      },
    ]);
    expect(
      originProblems(
        true,
        Array.from({ length: 21 }, (_, i) => `https://s${i}.example`),
      ),
    ).toEqual([{ field: "allowedOrigins", message: "at most 20 allowed origins per key" }]);
  });
});
