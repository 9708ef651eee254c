import { describe, expect, it } from "vitest";
import { amountProblems } from "../../src/ingest/core/validation.js";
import { canonicalDecimal, parseDecimal, sameDecimal } from "../../src/values/decimal.js";

describe("parseDecimal", () => {
  it("splits sign, whole and fraction digits as written", () => {
    expect(parseDecimal("12")).toEqual({ negative: false, whole: "12", fraction: "" });
    expect(parseDecimal("0012.500")).toEqual({ negative: false, whole: "0012", fraction: "500" });
    expect(parseDecimal("-0.00000001")).toEqual({ negative: true, whole: "0", fraction: "00000001" });
  });

  it("refuses anything but digits, one optional point and a leading minus", () => {
    for (const text of ["", "+1", "1.", ".5", "1e3", "1,000", "1_000", " 1", "1 ", "1.2.3", "--1", "0x10", "١٢"]) {
      expect([text, parseDecimal(text)]).toEqual([text, undefined]);
    }
  });
});

describe("canonicalDecimal", () => {
  it("drops trailing fraction zeros and a bare point", () => {
    expect(canonicalDecimal("15000.50000000")).toBe("15000.5");
    expect(canonicalDecimal("13000.00000000")).toBe("13000");
    expect(canonicalDecimal("0.00000001")).toBe("0.00000001");
    expect(canonicalDecimal("0.10000000")).toBe("0.1");
    expect(canonicalDecimal("0.00000000")).toBe("0");
  });

  it("drops leading zeros of the whole part but keeps one digit", () => {
    expect(canonicalDecimal("007.10")).toBe("7.1");
    expect(canonicalDecimal("000")).toBe("0");
    expect(canonicalDecimal("00.5")).toBe("0.5");
    expect(canonicalDecimal("100")).toBe("100");
  });

  it("keeps every significant digit of a DECIMAL(65,8)-sized sum, far beyond a double", () => {
    const whole = "12345678901234567890123456789012345678901234567890123456";
    expect(canonicalDecimal(`${whole}.12345678`)).toBe(`${whole}.12345678`);
    expect(canonicalDecimal(`${whole}.10000000`)).toBe(`${whole}.1`);
    expect(canonicalDecimal("9007199254740993.00000001")).toBe("9007199254740993.00000001");
    expect(canonicalDecimal("999999999999.99999999")).toBe("999999999999.99999999");
  });

  it("keeps the sign", () => {
    expect(canonicalDecimal("-3.10")).toBe("-3.1");
    expect(canonicalDecimal("-0012")).toBe("-12");
  });

  it("throws on text that is not a decimal string", () => {
    expect(() => canonicalDecimal("1e3")).toThrow('not a decimal string: "1e3"');
    expect(() => canonicalDecimal("")).toThrow("not a decimal string");
    expect(() => canonicalDecimal("12.")).toThrow("not a decimal string");
  });
});

describe("sameDecimal", () => {
  it("compares values as text", () => {
    expect(sameDecimal("12.50000000", "12.5")).toBe(true);
    expect(sameDecimal("12", "12.00000000")).toBe(true);
    expect(sameDecimal("012.5", "12.5")).toBe(true);
    expect(sameDecimal("12.5", "12.05")).toBe(false);
    expect(sameDecimal("125", "12.5")).toBe(false);
    expect(sameDecimal("0.00000001", "0.00000010")).toBe(false);
    expect(sameDecimal("9007199254740993", "9007199254740992")).toBe(false);
  });
});

describe("amountProblems (the ingest rule on top of the decimal syntax)", () => {
  it("accepts plain positive amounts of up to 12 whole and 8 fraction digits", () => {
    expect(amountProblems("12.5")).toEqual([]);
    expect(amountProblems("0.00000001")).toEqual([]);
    expect(amountProblems("999999999999.99999999")).toEqual([]);
  });

  it("names each problem", () => {
    expect(amountProblems("0.00000000")).toEqual(["amount must be greater than 0"]);
    expect(amountProblems("0")).toEqual(["amount must be greater than 0"]);
    expect(amountProblems("012")).toEqual(["amount must not have leading zeros"]);
    expect(amountProblems("1.123456789")).toEqual(["amount must have at most 8 fraction digits"]);
    expect(amountProblems("1000000000000")).toEqual(["amount must be below 10^12"]);
    expect(amountProblems("12.")).toEqual(["amount must be a decimal number like 12.5 (digits and an optional point)"]);
    expect(amountProblems("-2")).toEqual(["amount must be a positive decimal without a sign"]);
  });
});
