/**
 * The period request's JSON field decoder (src/boards/wire/codecs/), against the contract's messages
 * (docs/contract.md): whole numbers and strings of digits are read, anything
 * else present is "must be a whole number" naming the field, absent fields
 * are left to the rules ("is required"), unknown fields are ignored.
 */
import { describe, expect, it } from "vitest";
import { DecodedBodies } from "../../src/boards/wire/codecs/decoded-bodies.js";
import { decodeRequestFields } from "../../src/boards/wire/codecs/period-request-json.js";

describe("decodeRequestFields", () => {
  it("reads numbers and digit strings as whole numbers, and ignores unknown fields", () => {
    expect(
      decodeRequestFields({ startTimestamp: 1733115600, endTimestamp: "1790812800", numUsers: "-3", extra: true }),
    ).toEqual({
      values: { startTimestamp: 1733115600n, endTimestamp: 1790812800n, numUsers: -3n },
      signed: false,
      violations: [],
    });
  });

  it('reads "signed": true as a request for a signed board, and names a signed that is not a boolean', () => {
    expect(decodeRequestFields({ signed: true })).toEqual({
      values: { startTimestamp: undefined, endTimestamp: undefined, numUsers: undefined },
      signed: true,
      violations: [],
    });
    expect(decodeRequestFields({ signed: "yes" }).violations).toEqual([
      { field: "signed", message: 'signed must be true or false, got "yes"' },
    ]);
  });

  it("leaves absent fields undefined", () => {
    expect(decodeRequestFields({})).toEqual({
      values: { startTimestamp: undefined, endTimestamp: undefined, numUsers: undefined },
      signed: false,
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

describe("numbers JSON cannot carry exactly", () => {
  it("names a number beyond a double (1e400) and one with more digits than a double holds for what they are", () => {
    const body = JSON.parse('{"startTimestamp":1e400,"endTimestamp":99999999999999999999999,"numUsers":-1e400}');
    expect(decodeRequestFields(body).violations).toEqual([
      {
        field: "startTimestamp",
        message: "startTimestamp is out of range: the number sent is beyond what a JSON number can hold",
      },
      {
        field: "endTimestamp",
        message:
          "endTimestamp is out of range: the number sent has more digits than a JSON number holds exactly (read as 1e+23)",
      },
      { field: "numUsers", message: "numUsers is out of range: the number sent is beyond what a JSON number can hold" },
    ]);
  });
});

describe("DecodedBodies (request bodies seen lately, decoded once)", () => {
  const body = (text: string) => Buffer.from(text, "utf8");
  const JAN = '{"startTimestamp":1735689600,"endTimestamp":"1738367999","numUsers":10}';

  it("decodes a body as decodeRequestFields does, and hands out the same frozen fields for the same bytes", () => {
    const bodies = new DecodedBodies();
    const first = bodies.decode(body(JAN));
    expect(first).toEqual({
      values: { startTimestamp: 1735689600n, endTimestamp: 1738367999n, numUsers: 10n, rankBy: undefined },
      signed: false,
      violations: [],
    });
    expect(bodies.decode(body(JAN))).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.values) && Object.isFrozen(first.violations)).toBe(true);
    // One byte more is another body.
    expect(bodies.decode(body(`${JAN} `))).not.toBe(first);
  });

  it("remembers a body with a wrong field too, its violation included", () => {
    const bodies = new DecodedBodies();
    const decoded = bodies.decode(body('{"startTimestamp":"x"}'));
    expect(decoded.violations).toEqual([
      { field: "startTimestamp", message: 'startTimestamp must be a whole number, got "x"' },
    ]);
    expect(bodies.decode(body('{"startTimestamp":"x"}'))).toBe(decoded);
  });

  it("keeps at most its bound, dropping the body remembered longest ago", () => {
    const bodies = new DecodedBodies(2);
    const a = bodies.decode(body('{"numUsers":1}'));
    const b = bodies.decode(body('{"numUsers":2}'));
    bodies.decode(body('{"numUsers":3}'));
    expect(bodies.decode(body('{"numUsers":2}'))).toBe(b);
    const again = bodies.decode(body('{"numUsers":1}'));
    expect(again).not.toBe(a);
    expect(again).toEqual(a);
  });

  it("decodes bodies larger than its limit every time, and refuses one that is not a JSON object every time", () => {
    const bodies = new DecodedBodies();
    const large = body(`{"numUsers":5,"pad":"${"x".repeat(DecodedBodies.MAX_BYTES)}"}`);
    const once = bodies.decode(large);
    expect(once.values.numUsers).toBe(5n);
    expect(bodies.decode(large)).not.toBe(once);
    for (let i = 0; i < 2; i++) expect(() => bodies.decode(body("[1]"))).toThrow(/must be a JSON object/);
  });
});
