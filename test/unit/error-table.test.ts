/**
 * The parts of the error catalogue the RPC table (test/unit/error-catalogue.test.ts)
 * does not walk: every Connect code's HTTP status, every HTTP-level refusal,
 * both renderers' exact bodies, and how database failures are classified.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { describe, expect, it } from "vitest";
import { ContentionError } from "../../src/platform/database/transactions.js";
import { HTTP_REFUSALS, HttpRefusal, ServiceError } from "../../src/platform/errors/catalogue.js";
import { fromDatabase } from "../../src/platform/errors/database.js";
import { httpStatusForCode } from "../../src/platform/errors/http-status.js";
import { renderConnectError, renderRestError } from "../../src/platform/errors/renderers.js";

/** From the Connect protocol specification's table, written out by hand. */
const STATUS_BY_CODE: [Code, number][] = [
  [Code.Canceled, 499],
  [Code.Unknown, 500],
  [Code.InvalidArgument, 400],
  [Code.DeadlineExceeded, 504],
  [Code.NotFound, 404],
  [Code.AlreadyExists, 409],
  [Code.PermissionDenied, 403],
  [Code.ResourceExhausted, 429],
  [Code.FailedPrecondition, 400],
  [Code.Aborted, 409],
  [Code.OutOfRange, 400],
  [Code.Unimplemented, 501],
  [Code.Internal, 500],
  [Code.Unavailable, 503],
  [Code.DataLoss, 500],
  [Code.Unauthenticated, 401],
];

describe("HTTP status of every Connect code", () => {
  it("covers all sixteen codes", () => {
    const all = Object.values(Code).filter((value): value is Code => typeof value === "number");
    expect(STATUS_BY_CODE.map(([code]) => code).sort((a, b) => a - b)).toEqual(all.sort((a, b) => a - b));
  });
  it.each(STATUS_BY_CODE)("code %i is HTTP %i, as connect-es itself maps it", (code, status) => {
    expect(httpStatusForCode(code)).toBe(status);
    expect(codeToHttpStatus(code)).toBe(status);
  });
});

describe("HTTP-level refusals", () => {
  const EXPECTED: Record<string, [number, string]> = {
    NOT_FOUND: [404, "not_found"],
    METHOD_NOT_ALLOWED: [405, "method_not_allowed"],
    REQUEST_TIMEOUT: [408, "request_timeout"],
    PAYLOAD_TOO_LARGE: [413, "payload_too_large"],
    UNSUPPORTED_MEDIA_TYPE: [415, "unsupported_media_type"],
    CORS_REFUSED: [403, "permission_denied"],
    HEADERS_TOO_LARGE: [431, "request_header_fields_too_large"],
    MALFORMED_HTTP: [400, "invalid_argument"],
    UNAVAILABLE: [503, "unavailable"],
  };
  it("lists exactly these", () => {
    expect(Object.keys(HTTP_REFUSALS).sort()).toEqual(Object.keys(EXPECTED).sort());
  });
  it.each(Object.entries(EXPECTED))("%s renders as %i %s in both shapes", (kind, [status, code]) => {
    const refusal = new HttpRefusal(kind as keyof typeof HTTP_REFUSALS, "a message", { allow: "POST" });
    expect(renderRestError(refusal)).toEqual({
      status,
      code,
      headers: { "cache-control": "no-store", allow: "POST" },
      body: `{"data":null,"errors":[{"code":"${code}","message":"a message"}]}`,
    });
    expect(renderConnectError(refusal)).toEqual({
      status,
      code,
      headers: { "cache-control": "no-store", allow: "POST" },
      body: `{"code":"${code}","message":"a message"}`,
    });
  });
});

describe("the REST envelope of an RPC error", () => {
  it("has one item per field violation, with the error's headers", () => {
    const error = new ServiceError("INVALID_ARGUMENT", "a. b", {
      violations: [{ field: "numUsers", message: "a" }, { message: "b" }],
      retryAfterSeconds: 3,
    });
    expect(renderRestError(error)).toEqual({
      status: 400,
      code: "invalid_argument",
      headers: { "cache-control": "no-store", "retry-after": "3" },
      body:
        '{"data":null,"errors":[{"code":"invalid_argument","message":"a","field":"numUsers"},' +
        '{"code":"invalid_argument","message":"b"}]}',
    });
  });
  it("shows a thrown non-error as internal, never its text", () => {
    const rendered = renderRestError(new Error("SELECT * FROM secret_table"));
    expect([rendered.status, rendered.body]).toEqual([
      500,
      '{"data":null,"errors":[{"code":"internal","message":"internal error"}]}',
    ]);
  });
});

describe("database failures", () => {
  const failure = (fields: object) => Object.assign(new Error("driver message"), fields);
  const transient: [string, object][] = [
    ["connection refused", { code: "ECONNREFUSED", errno: -111, fatal: true }],
    ["connection lost", { code: "PROTOCOL_CONNECTION_LOST", fatal: true }],
    ["non-Primary Galera node", { errno: 1047 }],
    ["server shutting down", { errno: 1053 }],
    ["deadlock", { errno: 1213 }],
    ["lock wait timeout", { errno: 1205 }],
    ["MariaDB statement timeout", { errno: 1969 }],
    ["MySQL statement timeout", { errno: 3024 }],
    ["query killed", { errno: 1317 }],
    ["too many connections", { errno: 1040 }],
    ["pool closed", { message: "Pool is closed." }],
    ["pool queue full", { message: "Queue limit reached." }],
  ];
  it.each(transient)("%s is unavailable with Retry-After 1, the cause kept for the log", (_name, fields) => {
    const error = failure(fields);
    const seen = fromDatabase(error);
    expect([seen.code, seen.rawMessage, seen.metadata.get("retry-after"), seen.cause]).toEqual([
      Code.Unavailable,
      "the leaderboard database is unavailable right now. Retry shortly",
      "1",
      error,
    ]);
  });
  const ours: [string, object][] = [
    ["a syntax error", { errno: 1064, code: "ER_PARSE_ERROR" }],
    ["a missing table", { errno: 1146, code: "ER_NO_SUCH_TABLE" }],
    ["a duplicate key", { errno: 1062, code: "ER_DUP_ENTRY" }],
    ["a plain bug", {}],
  ];
  it.each(ours)("%s is internal, with a generic message and the cause kept", (_name, fields) => {
    const error = failure(fields);
    const seen = fromDatabase(error);
    expect([seen.code, seen.rawMessage, seen.cause]).toEqual([Code.Internal, "internal error", error]);
  });
  it("a transaction that met contention on every attempt is unavailable, not internal", () => {
    const error = new ContentionError(30, failure({ errno: 1213 }));
    const seen = fromDatabase(error);
    expect([seen.code, seen.rawMessage, seen.metadata.get("retry-after"), seen.cause]).toEqual([
      Code.Unavailable,
      "the leaderboard database is unavailable right now. Retry shortly",
      "1",
      error,
    ]);
  });
  it("passes a service error through unchanged", () => {
    const error = new ConnectError("already decided", Code.NotFound);
    expect(fromDatabase(error)).toBe(error);
  });
});
