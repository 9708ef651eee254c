/** Calls of the one operation over REST (fetch) and Connect (connect-es), returning what a test asserts on. */
import type http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { FEB_1_2025, JAN_1_2025 } from "./dates.js";

export const OPERATION = "/top-affiliate-wagers-by-period";
export const PROCEDURE = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
/** A valid request for January 2025. */
export const JANUARY = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 } as const;

export interface RestReply {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  readonly json: unknown;
}

export function recordOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** POST the operation with fetch; `key` null sends no Authorization. */
export async function restTop(
  baseUrl: string,
  key: string | null,
  body: unknown = JANUARY,
  signal?: AbortSignal,
): Promise<RestReply> {
  const response = await fetch(`${baseUrl}${OPERATION}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // left as text; the test says what it expected
  }
  return { status: response.status, headers: recordOf(response.headers), text, json };
}

export interface RpcReply {
  /** 0 for success, else the Connect/gRPC code. */
  readonly code: Code | 0;
  readonly message: string;
  /** Response headers on success; the error's metadata (headers and trailers) on failure. */
  readonly headers: Readonly<Record<string, string>>;
  readonly entries: number;
}

export async function rpcTop(
  transport: Transport,
  key: string | null,
  request: { startTimestamp?: number; endTimestamp?: number; numUsers?: number } = JANUARY,
): Promise<RpcReply> {
  const client = createClient(TopWagersService, transport);
  const headers: Record<string, string> = {};
  try {
    const response = await client.getTopAffiliateWagersByPeriod(
      create(GetTopAffiliateWagersByPeriodRequestSchema, {
        ...(request.startTimestamp === undefined ? {} : { startTimestamp: BigInt(request.startTimestamp) }),
        ...(request.endTimestamp === undefined ? {} : { endTimestamp: BigInt(request.endTimestamp) }),
        ...(request.numUsers === undefined ? {} : { numUsers: request.numUsers }),
      }),
      {
        headers: key === null ? {} : { authorization: `Bearer ${key}` },
        onHeader: (h) => Object.assign(headers, recordOf(h)),
        timeoutMs: 10_000,
      },
    );
    return { code: 0, message: "", headers, entries: response.data.length };
  } catch (reason) {
    const error = ConnectError.from(reason);
    return { code: error.code, message: error.rawMessage, headers: recordOf(error.metadata), entries: 0 };
  }
}

/** The snake_case name of a Connect code ("resource_exhausted"), as the REST envelope uses it. */
export function codeName(code: Code | 0): string {
  if (code === 0) return "ok";
  return Code[code].replace(/[A-Z]/g, (c, i: number) => (i === 0 ? c.toLowerCase() : `_${c.toLowerCase()}`));
}

/**
 * Problems with a REST body as the contract's envelope, or [] when it is one:
 * exactly the keys `data` and `errors`; on 2xx an array and `null`; otherwise
 * `null` and a non-empty list of `{code, message[, field]}` with snake_case codes.
 */
export function envelopeProblems(status: number, json: unknown): string[] {
  if (typeof json !== "object" || json === null || Array.isArray(json))
    return [`body is not a JSON object: ${String(json).slice(0, 200)}`];
  const keys = Object.keys(json).sort();
  if (keys.join(",") !== "data,errors") return [`keys are ${keys.join(",")}`];
  const { data, errors } = json as { data: unknown; errors: unknown };
  if (status >= 200 && status < 300) {
    if (!Array.isArray(data)) return ["2xx data is not an array"];
    if (errors !== null) return ["2xx errors is not null"];
    return [];
  }
  const problems: string[] = [];
  if (data !== null) problems.push("error data is not null");
  if (!Array.isArray(errors) || errors.length === 0) return [...problems, "errors is not a non-empty array"];
  for (const item of errors as unknown[]) {
    if (typeof item !== "object" || item === null) {
      problems.push("error item is not an object");
      continue;
    }
    const { code, message, field, ...rest } = item as Record<string, unknown>;
    if (typeof code !== "string" || !/^[a-z]+(_[a-z]+)*$/.test(code)) problems.push(`bad code ${String(code)}`);
    if (typeof message !== "string" || message === "") problems.push("empty message");
    if (field !== undefined && typeof field !== "string") problems.push("field is not a string");
    if (Object.keys(rest).length > 0) problems.push(`extra item keys ${Object.keys(rest).join(",")}`);
  }
  return problems;
}

/**
 * The error a Connect client's call was refused with. Fails the test when the call succeeds, or
 * when it rejects with anything but a ConnectError (every refusal of a Connect client is one).
 */
export async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ConnectError) return error;
    throw new Error(`the call was refused with something other than a ConnectError: ${String(error)}`);
  }
  throw new Error("the call succeeded but should have been refused");
}

/** The request headers of a gRPC call of the operation on a raw HTTP/2 stream, with this key. */
export function grpcStreamHeaders(key: string, contentType = "application/grpc+proto"): http2.OutgoingHttpHeaders {
  return {
    ":method": "POST",
    ":path": PROCEDURE,
    "content-type": contentType,
    te: "trailers",
    authorization: `Bearer ${key}`,
  };
}
