/** The Node version check at start (issue 20, item 11): which versions `engines` allows. No process. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { nodeVersionWarning, packageInfo } from "../../src/platform/package-info.js";

const RANGE = "^22.19.0 || ^24.0.0 || >=26.0.0";

describe("nodeVersionWarning", () => {
  it("no warning for the versions engines allows", () => {
    for (const version of ["22.19.0", "22.20.1", "24.0.0", "24.21.0", "26.0.0", "27.1.0"]) {
      expect(nodeVersionWarning(version, RANGE), version).toBeUndefined();
    }
  });

  it("an older Node is named as older", () => {
    expect(nodeVersionWarning("20.20.2", RANGE)).toBe(
      `Node 20.20.2 is older than the versions this package supports (engines: ${RANGE}); run it on one of those`,
    );
    expect(nodeVersionWarning("22.18.9", RANGE)).toMatch(/^Node 22\.18\.9 is older than /);
  });

  it("a version between the allowed lines (odd releases) is named as not among them", () => {
    expect(nodeVersionWarning("23.11.0", RANGE)).toBe(
      `Node 23.11.0 is not among the versions this package supports (engines: ${RANGE}); run it on one of those`,
    );
  });

  it("reads this package's own package.json", () => {
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    expect(packageInfo()).toEqual({ version, nodeRange: RANGE, commit: expect.any(String) });
    // The commit a build recorded (dist/src/build-info.json), or "unknown" where nothing was built (this tier).
    expect(packageInfo().commit).toMatch(/^(?:[0-9a-f]{12}(?:-dirty)?|unknown)$/);
  });
});
