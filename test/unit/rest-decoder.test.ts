/**
 * The REST skin's JSON field decoder, against the contract's messages
 * (docs/contract.md): whole numbers and strings of digits are read, anything
 * else present is "must be a whole number" naming the field, absent fields
 * are left to the rules ("is required"), unknown fields are ignored.
 */
import { describe, expect, it } from "vitest";
import { decodeRequestFields } from "../../src/handlers/rest.js";

describe("decodeRequestFields", () => {
  it("reads numbers and digit strings as whole numbers, and ignores unknown fields", () => {
    expect(
      decodeRequestFields({ startTimestamp: 1733115600, endTimestamp: "1790812800", numUsers: "-3", extra: true }),
    ).toEqual({
      values: { startTimestamp: 1733115600n, endTimestamp: 1790812800n, numUsers: -3n },
      violations: [],
    });
  });

  it("leaves absent fields undefined", () => {
    expect(decodeRequestFields({})).toEqual({
      values: { startTimestamp: undefined, endTimestamp: undefined, numUsers: undefined },
      violations: [],
    });
  });

  it("names every field of the wrong type, with the value as JSON, in field order", () => {
    const decoded = decodeRequestFields({
      numUsers: 2.5,
      endTimestamp: null,
      startTimestamp: "1e9",
    });
    expect(decoded.violations).toEqual([
      { field: "startTimestamp", message: 'startTimestamp must be a whole number, got "1e9"' },
      { field: "endTimestamp", message: "endTimestamp must be a whole number, got null" },
      { field: "numUsers", message: "numUsers must be a whole number, got 2.5" },
    ]);
    expect(decoded.values).toEqual({ startTimestamp: undefined, endTimestamp: undefined, numUsers: undefined });
  });

  it.each([
    [true, "true"],
    [[3], "[3]"],
    [{ value: 3 }, '{"value":3}'],
    ["", '""'],
    [" 5", '" 5"'],
    ["0x10", '"0x10"'],
    ["1234567890123456789012345678901", '"1234567890123456789012345678901"'],
  ])("refuses %j", (value, shown) => {
    expect(decodeRequestFields({ numUsers: value }).violations).toEqual([
      { field: "numUsers", message: `numUsers must be a whole number, got ${shown}` },
    ]);
  });
});
