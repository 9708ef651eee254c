/**
 * The request gate of the RPC protocols: before Connect reads a body, a call to a service that
 * is not open passes the listener's admission step (a key on the public listener, a service
 * token on the internal one) or is refused. REST and the live streams admit in their skins.
 */
import type { HandlerContext } from "@connectrpc/connect";
import { endCallsWithSharedReason, reportUnparsableMessagesAsInvalid } from "../../platform/compat/connect.js";
import { malformedRequest } from "../../platform/errors/catalogue.js";
import type { CallFacts, CallObservation } from "../../platform/observability/call-observation.js";

/** Services open to every caller on both listeners: health checks and reflection need no credential. */
export const OPEN_SERVICES: ReadonlySet<string> = new Set([
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
]);

/**
 * The listener's admission step for a service that is not open: on headers only, before any body
 * is read. Throws to refuse the call.
 */
export type Admit = (context: HandlerContext, facts: CallFacts) => void | Promise<void>;

/** A request message that is not valid protobuf binary, as the catalogue words it. */
const unparsableBinary = () => malformedRequest("the request message is not valid protobuf binary");

/** connectNodeAdapter's `requestGate`: admits every call to a service that is not open; a refusal is observed. */
export function requestGate(admit: Admit, calls: CallObservation): (context: HandlerContext) => Promise<void> {
  return async (context) => {
    endCallsWithSharedReason(context);
    reportUnparsableMessagesAsInvalid(context, unparsableBinary);
    const facts = calls.begin(context);
    if (OPEN_SERVICES.has(context.service.typeName)) return;
    try {
      await admit(context, facts);
    } catch (reason) {
      calls.refused(context, facts, reason);
      throw reason;
    }
  };
}
