/**
 * What both listeners do around every call, whatever the protocol: remember when its headers
 * arrived and from where, and count, time and (for faults of ours) log every call once, as one
 * series and one log line shape per procedure with the protocol as a label. The REST and stream
 * skins report through the same `observe`; the request gate (keys/gate/request-gate.ts) reports the
 * calls it refuses. With ACCESS_LOG=true every call also gets one info line (the access log).
 */
import type { ConnectRouterOptions, HandlerContext, Interceptor } from "@connectrpc/connect";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import { HttpRefusal } from "../errors/catalogue.js";
import { asConnectError } from "../errors/domain.js";
import { codeName, httpStatusForCode } from "../errors/http-status.js";
import type { Logger } from "../logger.js";
import { clientAddressOf } from "../transport/client-address.js";
import type { NodeRequest } from "../transport/http.js";
import { accessLogFields, type CallParty } from "./access-log.js";
import type { Metrics, Protocol } from "./metrics.js";

/** Per-call facts the transport knows, for the gate, the interceptor and the metrics. */
export interface CallFacts {
  readonly clientAddress: string | undefined;
  readonly startedAt: bigint;
  /** Set by the gate from Connect's own protocol name. */
  protocol: Protocol;
  /** The API key's id once the admission step has accepted it (never the secret), for the access log. */
  keyId?: string;
}

const callFactsKey = createContextKey<CallFacts>(
  { clientAddress: undefined, startedAt: 0n, protocol: "connect" },
  { description: "transport facts of the call" },
);

/** The client address the transport found for an RPC call (undefined outside a call). */
export function callClientAddress(values: HandlerContext["values"]): string | undefined {
  return values.get(callFactsKey).clientAddress;
}

export interface CallHooks {
  readonly metrics: Metrics | undefined;
  readonly logger: Logger;
  /** ACCESS_LOG: one info line per call. */
  readonly accessLog?: boolean;
}

/** Seconds since `startedAt` (process.hrtime.bigint()). */
function secondsSince(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt) / 1e9;
}

/**
 * Counts and times one call; logs it when it failed by a fault of ours (an error with a cause), and
 * writes its access log line when ACCESS_LOG is on. Every skin reports its calls through one.
 */
export type ObserveCall = (
  procedure: string,
  protocol: Protocol,
  startedAt: bigint,
  failure?: unknown,
  party?: CallParty,
) => void;

export interface CallObservation {
  readonly observe: ObserveCall;
  /**
   * The call's facts, its protocol now set from Connect's own protocol name: the request gate's
   * first step, before any body is read.
   */
  begin(context: HandlerContext): CallFacts;
  /** Counts, times and logs a call the request gate refused. */
  refused(context: HandlerContext, facts: CallFacts, reason: unknown): void;
  /** The options for connectNodeAdapter: interceptor and per-call context values. */
  readonly adapterOptions: Required<Pick<ConnectRouterOptions, "interceptors">> & {
    contextValues(req: NodeRequest): ReturnType<typeof createContextValues>;
  };
}

export function observeCalls(hooks: CallHooks): CallObservation {
  const observe = callObserver(hooks);
  const procedureOf = procedureNames();
  // The call's facts are its party for the access log as they are (no object per call).
  const partyOf = (facts: CallFacts): CallParty => facts;
  const begin = (context: HandlerContext) => {
    const facts = context.values.get(callFactsKey);
    facts.protocol = context.protocolName as Protocol;
    return facts;
  };
  const refused = (context: HandlerContext, facts: CallFacts, reason: unknown) => {
    observe(procedureOf(context), facts.protocol, facts.startedAt, reason, partyOf(facts));
  };
  const interceptor: Interceptor = (next) => async (request) => {
    const facts = request.contextValues.get(callFactsKey);
    try {
      const response = await next(request);
      observe(procedureOf(request), facts.protocol, facts.startedAt, undefined, partyOf(facts));
      return response;
    } catch (reason) {
      observe(procedureOf(request), facts.protocol, facts.startedAt, reason, partyOf(facts));
      throw reason;
    }
  };
  return {
    observe,
    begin,
    refused,
    adapterOptions: {
      interceptors: [interceptor],
      contextValues: (req) =>
        createContextValues().set(callFactsKey, {
          clientAddress: clientAddressOf(req),
          startedAt: process.hrtime.bigint(),
          protocol: "connect",
        }),
    },
  };
}

/** The call's code and HTTP status from its failure (ok and 200 without one); logs a fault of ours. */
function callObserver(hooks: CallHooks): ObserveCall {
  const { metrics, logger } = hooks;
  return (procedure, protocol, startedAt, failure, party) => {
    let code = "ok";
    let status = 200;
    if (failure instanceof HttpRefusal) {
      code = failure.code;
      status = failure.status;
    } else if (failure !== undefined) {
      const error = asConnectError(failure);
      code = codeName(error.code);
      status = httpStatusForCode(error.code);
      if (error.cause !== undefined) logger.error({ err: error.cause, procedure, protocol, code }, "call failed");
    }
    const seconds = secondsSince(startedAt);
    metrics?.observeCall(procedure, protocol, code, seconds);
    if (hooks.accessLog === true) {
      logger.info(accessLogFields({ procedure, protocol, code, status, seconds }, party), "call");
    }
  };
}

/** A procedure's full name ("service/method"), made once per method rather than per call. */
function procedureNames(): (call: { service: { typeName: string }; method: { name: string } }) => string {
  const procedures = new WeakMap<object, string>();
  return (call) => {
    let name = procedures.get(call.method);
    if (name === undefined) {
      name = `${call.service.typeName}/${call.method.name}`;
      procedures.set(call.method, name);
    }
    return name;
  };
}
