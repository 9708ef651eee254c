/**
 * The error catalogue: every reason maps to the code and HTTP status written
 * out here by hand (from the gRPC and Connect specifications), and every
 * error carries google.rpc.ErrorInfo with its reason, BadRequest for field
 * problems (proto field names) and RetryInfo for a retry delay.
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { CATALOGUE, protoFieldPath, ServiceError } from "../../src/platform/errors/catalogue.js";
import { codeName, httpStatusForCode } from "../../src/platform/errors/http-status.js";

const EXPECTED: Record<string, [string, number]> = {
  INVALID_ARGUMENT: ["invalid_argument", 400],
  MALFORMED_REQUEST: ["invalid_argument", 400],
  UNAUTHENTICATED: ["unauthenticated", 401],
  SECRET_KEY_IN_URL: ["unauthenticated", 401],
  BAD_SERVICE_TOKEN: ["unauthenticated", 401],
  MISSING_SCOPE: ["permission_denied", 403],
  RATE_LIMITED: ["resource_exhausted", 429],
  TOO_MANY_FAILED_ATTEMPTS: ["resource_exhausted", 429],
  LIMIT_REACHED: ["failed_precondition", 400],
  TOO_MANY_SENDS: ["resource_exhausted", 429],
  INGEST_DISABLED: ["failed_precondition", 400],
  ADMIN_DISABLED: ["failed_precondition", 400],
  UNKNOWN_USERS: ["failed_precondition", 400],
  WAGER_CONFLICT: ["already_exists", 409],
  KEY_NOT_FOUND: ["not_found", 404],
  RACE_NOT_FOUND: ["not_found", 404],
  RACE_STATE: ["failed_precondition", 400],
  SLUG_TAKEN: ["already_exists", 409],
  WEBHOOK_NOT_FOUND: ["not_found", 404],
  UNKNOWN_SERVICE: ["not_found", 404],
  BEYOND_RETENTION: ["out_of_range", 400],
  CONTENTION: ["aborted", 409],
  DATABASE_UNAVAILABLE: ["unavailable", 503],
  TOO_MANY_STREAMS: ["resource_exhausted", 429],
  INSTANCE_FULL: ["unavailable", 503],
  SHUTTING_DOWN: ["unavailable", 503],
  DEADLINE_EXCEEDED: ["deadline_exceeded", 504],
  INTERNAL: ["internal", 500],
};

describe("the catalogue", () => {
  it("lists exactly the reasons documented here", () => {
    expect(Object.keys(CATALOGUE).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(Object.entries(EXPECTED))("%s is %s, HTTP %i, with ErrorInfo", (reason, [code, status]) => {
    const error = new ServiceError(reason as keyof typeof CATALOGUE, "a message");
    expect([codeName(error.code), httpStatusForCode(error.code)]).toEqual([code, status]);
    expect(error.findDetails(ErrorInfoSchema).map((i) => [i.reason, i.domain])).toEqual([[reason, "topwagers"]]);
    expect(error.rawMessage).toBe("a message");
  });

  it("maps the remaining codes to their HTTP statuses", () => {
    expect(
      [
        Code.PermissionDenied,
        Code.Canceled,
        Code.Unimplemented,
        Code.DeadlineExceeded,
        Code.OutOfRange,
        Code.Unknown,
      ].map(httpStatusForCode),
    ).toEqual([403, 499, 501, 504, 400, 500]);
  });
});

describe("details", () => {
  it("BadRequest lists each violation by proto field name, at most 50", () => {
    const violations = Array.from({ length: 60 }, (_, i) => ({ field: `wagers[${i}]`, message: `problem ${i}` }));
    const error = new ServiceError("INVALID_ARGUMENT", "many", {
      violations: [{ field: "numUsers", message: "numUsers is required" }, ...violations],
    });
    const [badRequest] = error.findDetails(BadRequestSchema);
    expect(badRequest?.fieldViolations).toHaveLength(50);
    expect(badRequest?.fieldViolations.slice(0, 2).map((v) => [v.field, v.description])).toEqual([
      ["num_users", "numUsers is required"],
      ["wagers[0]", "problem 0"],
    ]);
  });

  it("RetryInfo and Retry-After carry the same delay", () => {
    const error = new ServiceError("RATE_LIMITED", "slow down", { retryAfterSeconds: 42 });
    expect(error.findDetails(RetryInfoSchema).map((r) => r.retryDelay?.seconds)).toEqual([42n]);
    expect(error.metadata.get("retry-after")).toBe("42");
  });

  it("writes JSON field paths as proto field names", () => {
    expect(
      ["numUsers", "startTimestamp", "wagerIds[3]", "rateLimit.windowSeconds", "users[2]", "id"].map(protoFieldPath),
    ).toEqual(["num_users", "start_timestamp", "wager_ids[3]", "rate_limit.window_seconds", "users[2]", "id"]);
  });
});
