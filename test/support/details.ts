/**
 * Expected google.rpc error details, built here with protobuf-es from the
 * published message definitions (not by the service's code), in the shapes
 * clients see: Connect JSON `details` items, and the gRPC
 * `grpc-status-details-bin` trailer.
 */
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

type Detail = { schema: DescMessage; init: object; debug: object };

const unpadded = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64").replace(/=+$/, "");

export function errorInfo(reason: string): Detail {
  return { schema: ErrorInfoSchema, init: { reason, domain: "topwagers" }, debug: { reason, domain: "topwagers" } };
}

export function badRequest(...violations: [field: string, description: string][]): Detail {
  const fieldViolations = violations.map(([field, description]) => ({ field, description }));
  // Proto JSON leaves out empty strings.
  const shown = fieldViolations.map((v) => (v.field === "" ? { description: v.description } : v));
  return { schema: BadRequestSchema, init: { fieldViolations }, debug: { fieldViolations: shown } };
}

export function retryInfo(seconds: number): Detail {
  return {
    schema: RetryInfoSchema,
    init: { retryDelay: { seconds: BigInt(seconds) } },
    debug: { retryDelay: `${seconds}s` },
  };
}

function encode(detail: Detail): Uint8Array {
  return toBinary(detail.schema, create(detail.schema, detail.init as MessageInitShape<DescMessage>));
}

/** The `details` of a Connect JSON error body as connect-node writes them (with `debug`). */
export function connectDetails(...details: Detail[]) {
  return details.map((d) => ({ type: d.schema.typeName, value: unpadded(encode(d)), debug: d.debug }));
}

/** The `details` as buf curl prints them (no `debug`). */
export function bufCurlDetails(...details: Detail[]) {
  return details.map((d) => ({ type: d.schema.typeName, value: unpadded(encode(d)) }));
}

/** The `grpc-status-details-bin` value: google.rpc.Status with the details packed in Any. */
export function statusDetailsBin(code: number, message: string, ...details: Detail[]): string {
  const status = create(StatusSchema, {
    code,
    message,
    details: details.map((d) => anyPack(d.schema, create(d.schema, d.init as MessageInitShape<DescMessage>))),
  });
  return unpadded(toBinary(StatusSchema, status));
}
