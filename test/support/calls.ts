/** Calls of the one operation over Connect (connect-es) and gRPC streams, returning what a test asserts on; REST is in ./rest.ts. */
import type http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { type Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as protoLoader from "@grpc/proto-loader";
import { GetTopAffiliateWagersByPeriodRequestSchema, TopWagersService } from "../../gen/topwagers/v1/top_wagers_pb.js";
import { JANUARY } from "./dates.js";
import { recordOf } from "./rest.js";

/** An interceptor that sends `Authorization: Bearer <key>` with every call. */
export function sendsBearer(key: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${key}`);
    return next(request);
  };
}

/** A Connect transport (HTTP/1.1) to `baseUrl` that sends `Authorization: Bearer <key>` with every call. */
export function bearerConnect(baseUrl: string, key: string): Transport {
  return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [sendsBearer(key)] });
}

/** A ranked entry message (TopWagerEntry, RaceEntry) as [rank, user id, username, avatar, total, weighted total]. */
export function entryCells(e: {
  rank: number;
  userId: string;
  username: string;
  avatar: string;
  totalWageredDecimal: string;
  weightedWageredDecimal: string;
}): (string | number)[] {
  return [e.rank, e.userId, e.username, e.avatar, e.totalWageredDecimal, e.weightedWageredDecimal];
}

export const PROCEDURE = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";

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

const protoDefinitions = new Map<string, protoLoader.PackageDefinition>();

/** A method of TopWagersService as @grpc/grpc-js calls it, read from the .proto by proto-loader (once per options). */
export function grpcJsMethod(
  name: "GetTopAffiliateWagersByPeriod" | "WatchTopAffiliateWagersByPeriod",
  options: protoLoader.Options = { longs: String, enums: String, defaults: true },
): protoLoader.MethodDefinition<object, object> {
  const cacheKey = JSON.stringify(options, (_, value: unknown) => (typeof value === "function" ? value.name : value));
  let definition = protoDefinitions.get(cacheKey);
  if (definition === undefined) {
    definition = protoLoader.loadSync("proto/topwagers/v1/top_wagers.proto", options);
    protoDefinitions.set(cacheKey, definition);
  }
  const method = (definition["topwagers.v1.TopWagersService"] as protoLoader.ServiceDefinition)[name];
  if (method === undefined) throw new Error(`proto-loader found no ${name}`);
  return method;
}

/** When a call of a traffic loop started and ended (Date.now() milliseconds). */
export interface Timed {
  readonly startedAt: number;
  readonly endedAt: number;
}
