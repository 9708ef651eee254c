/**
 * The REST contract (docs/contract.md, "The one public operation") on a real socket over a real database: every validation rule with
 * its message and field, and bodies that are not a JSON object.
 * One of the test/integration/rest-contract-*.test.ts files; the calls, constants and data are in
 * test/support/rest-contract.ts.
 */
import { describe, expect, it } from "vitest";
import { NOV_1, OCT_1, OCT_16 } from "../support/dates.js";
import { type ErrorItem, errorBody, invalid, jsonParseMessage } from "../support/rest.js";
import * as contract from "../support/rest-contract.js";

contract.useRestContractServer();

// ---- validation ------------------------------------------------------------

describe("400: validation, every problem reported with its field", () => {
  const valid = { ...contract.OCTOBER, numUsers: 3 };
  const TOP_3 = { data: contract.OCTOBER_RANKING.slice(0, 3), errors: null };
  const whole = (field: string, got: string) => invalid(`${field} must be a whole number, got ${got}`, field);
  const required = (field: string) => invalid(`${field} is required`, field);

  const cases: [string, unknown, ErrorItem[]][] = [
    ["{} reports all three fields", {}, [required("startTimestamp"), required("endTimestamp"), required("numUsers")]],
    ["missing startTimestamp", { endTimestamp: NOV_1 - 1, numUsers: 3 }, [required("startTimestamp")]],
    ["missing endTimestamp", { startTimestamp: OCT_1, numUsers: 3 }, [required("endTimestamp")]],
    ["missing numUsers (missing is not 0)", { ...contract.OCTOBER }, [required("numUsers")]],
    [
      "a fractional startTimestamp",
      { ...valid, startTimestamp: 1733115600.5 },
      [whole("startTimestamp", "1733115600.5")],
    ],
    ["a fractional endTimestamp", { ...valid, endTimestamp: 1790812800.25 }, [whole("endTimestamp", "1790812800.25")]],
    ["numUsers 2.5", { ...valid, numUsers: 2.5 }, [whole("numUsers", "2.5")]],
    ["a boolean", { ...valid, startTimestamp: true }, [whole("startTimestamp", "true")]],
    ["null (present, not missing)", { ...valid, endTimestamp: null }, [whole("endTimestamp", "null")]],
    ["an array", { ...valid, numUsers: [3] }, [whole("numUsers", "[3]")]],
    ["an object", { ...valid, numUsers: { value: 3 } }, [whole("numUsers", '{"value":3}')]],
    ["a non-numeric string", { ...valid, startTimestamp: "yesterday" }, [whole("startTimestamp", '"yesterday"')]],
    ["an empty string", { ...valid, numUsers: "" }, [whole("numUsers", '""')]],
    ["a decimal string", { ...valid, numUsers: "2.5" }, [whole("numUsers", '"2.5"')]],
    [
      "startTimestamp one second before 1733115600",
      { ...valid, startTimestamp: contract.EARLIEST_START - 1 },
      [invalid("startTimestamp must be 1733115600 (2 December 2024) or later", "startTimestamp")],
    ],
    [
      "a negative startTimestamp",
      { ...valid, startTimestamp: -1 },
      [invalid("startTimestamp must be a Unix timestamp in seconds (0 or more)", "startTimestamp")],
    ],
    ["numUsers 0", { ...valid, numUsers: 0 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    ["numUsers 101", { ...valid, numUsers: 101 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    ["numUsers -1", { ...valid, numUsers: -1 }, [invalid("numUsers must be between 1 and 100", "numUsers")]],
    [
      "a startTimestamp in milliseconds",
      { ...valid, startTimestamp: 1790812800000, endTimestamp: 1793491199000 },
      [
        invalid("startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "startTimestamp"),
        invalid("endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "endTimestamp"),
      ],
    ],
    [
      "an endTimestamp just above 10^11",
      { ...valid, endTimestamp: 100_000_000_001 },
      [invalid("endTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "endTimestamp")],
    ],
    [
      "milliseconds as a numeric string",
      { ...valid, startTimestamp: "1790812800000" },
      [invalid("startTimestamp looks like milliseconds. Send Unix seconds (divide by 1000)", "startTimestamp")],
    ],
    [
      "endTimestamp one second before startTimestamp",
      { startTimestamp: OCT_16, endTimestamp: OCT_16 - 1, numUsers: 3 },
      [invalid(contract.END_BEFORE_START_MESSAGE, "endTimestamp")],
    ],
    [
      "three problems at once",
      { startTimestamp: 1, endTimestamp: 0, numUsers: 0 },
      [
        invalid("startTimestamp must be 1733115600 (2 December 2024) or later", "startTimestamp"),
        invalid(contract.END_BEFORE_START_MESSAGE, "endTimestamp"),
        invalid("numUsers must be between 1 and 100", "numUsers"),
      ],
    ],
    [
      "a wrong type next to a missing field",
      { startTimestamp: false, numUsers: 101 },
      [
        whole("startTimestamp", "false"),
        required("endTimestamp"),
        invalid("numUsers must be between 1 and 100", "numUsers"),
      ],
    ],
  ];

  it.each(cases)("rejects %s", async (_name, body, items) => {
    const reply = await contract.top(contract.keys.rank, body);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(errorBody(...items));
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(reply.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });

  it("accepts numeric strings as proto JSON does", async () => {
    const reply = await contract.top(contract.keys.rank, {
      startTimestamp: String(OCT_1),
      endTimestamp: String(NOV_1 - 1),
      numUsers: "3",
    });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  it("accepts the bounds themselves: start 1733115600, numUsers 1 and 100", async () => {
    expect(
      (
        await contract.top(contract.keys.rank, {
          startTimestamp: contract.EARLIEST_START,
          endTimestamp: NOV_1 - 1,
          numUsers: 3,
        })
      ).json,
    ).toEqual({
      // Since 2 December 2024 the whale also has its 10000 of 30 September.
      data: [
        { ...contract.OCTOBER_RANKING[1], totalWagered: 10500 },
        contract.OCTOBER_RANKING[0],
        contract.OCTOBER_RANKING[2],
      ],
      errors: null,
    });
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 1 })).toEqual(
      contract.OCTOBER_RANKING.slice(0, 1),
    );
    expect(await contract.entries(contract.keys.rank, { ...contract.OCTOBER, numUsers: 100 })).toEqual(
      contract.OCTOBER_RANKING,
    );
  });

  it("ignores unknown extra fields", async () => {
    const reply = await contract.top(contract.keys.rank, {
      ...valid,
      affiliateId: "aff-a",
      numusers: 0,
      extra: { nested: [1, 2] },
    });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual(TOP_3);
  });

  const bodies: [string, string, string][] = [
    [
      "malformed JSON",
      '{"startTimestamp": 1790812800,',
      `request body is not valid JSON (${jsonParseMessage('{"startTimestamp": 1790812800,')})`,
    ],
    [
      "JSON with a trailing comma",
      '{"numUsers": 3,}',
      `request body is not valid JSON (${jsonParseMessage('{"numUsers": 3,}')})`,
    ],
    ["an empty body", "", contract.EMPTY_BODY_MESSAGE],
    ["a body of whitespace", " \r\n\t ", contract.EMPTY_BODY_MESSAGE],
    ["a contract.top-level array", "[1790812800, 1793491199, 3]", contract.NOT_AN_OBJECT_MESSAGE],
    ["a contract.top-level number", "42", contract.NOT_AN_OBJECT_MESSAGE],
    ["a contract.top-level string", '"startTimestamp"', contract.NOT_AN_OBJECT_MESSAGE],
    ["contract.top-level null", "null", contract.NOT_AN_OBJECT_MESSAGE],
    ["contract.top-level true", "true", contract.NOT_AN_OBJECT_MESSAGE],
  ];

  it.each(bodies)("answers %s with 400 in the envelope, naming no field", async (_name, body, message) => {
    const reply = await contract.top(contract.keys.rank, body);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual(errorBody(invalid(message)));
  });
});
