/** Accept-Encoding negotiation (RFC 9110 §12.5.3), one rule for the REST answers and the docs page. */
import { describe, expect, it } from "vitest";
import { acceptsGzip } from "../../src/platform/transport/accept-encoding.js";

describe("acceptsGzip", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["gzip", true],
    ["GZIP", true],
    ["br, gzip", true],
    ["gzip;q=0", false],
    ["gzip; q=0.5", true],
    ["*", true],
    ["*;q=0", false],
    ["gzip;q=0, *", false],
    ["*, gzip;q=0", false],
    ["br, *;q=0.1", true],
    ["identity", false],
    ["deflate, br", false],
  ] as const)("%j → %s", (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });

  it("reads a header sent several times", () => {
    expect(acceptsGzip(["br", "gzip"])).toBe(true);
    expect(acceptsGzip(["br", "deflate"])).toBe(false);
  });
});
