/**
 * The standard gRPC services that tools expect: grpc.health.v1.Health (load
 * balancers, Kubernetes gRPC probes) and server reflection v1 and v1alpha
 * (`buf curl`, grpcurl and Postman discover our API without a local proto).
 * Neither needs an API key.
 */

import type { DescFile, Registry } from "@bufbuild/protobuf";
import { create, createRegistry, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import {
  file_grpc_health_v1_health,
  Health,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { file_topwagers_v1_races } from "../../../gen/topwagers/v1/races_pb.js";
import { file_topwagers_v1_signing } from "../../../gen/topwagers/v1/signing_pb.js";
import { file_topwagers_v1_top_wagers } from "../../../gen/topwagers/v1/top_wagers_pb.js";
import { file_topwagers_v1_webhooks } from "../../../gen/topwagers/v1/webhooks_pb.js";
import { ServiceError } from "../errors/catalogue.js";

/** Whether the process is ready to serve (the same answer as /readyz). */
export interface ServingState {
  ready(): Promise<boolean>;
}

export function registerHealth(router: ConnectRouter, services: readonly string[], state: ServingState): void {
  const known = (service: string) => {
    if (service !== "" && !services.includes(service)) {
      // Echo only a well-formed name: grpc-js would show "/", ":" and the like percent-escaped.
      throw new ServiceError(
        "UNKNOWN_SERVICE",
        /^[A-Za-z_][A-Za-z0-9_.]{0,199}$/.test(service)
          ? `unknown service ${service}`
          : "unknown service. A service name is a fully qualified protobuf name like topwagers.v1.TopWagersService",
      );
    }
  };
  const serving = async () => ((await state.ready()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  const status = async (service: string) => {
    known(service);
    return serving();
  };
  router.service(Health, {
    async check(request) {
      return create(HealthCheckResponseSchema, { status: await status(request.service) });
    },
    async list() {
      // Every service of a listener is exactly as ready as the process: one readiness check for the list.
      const current = await serving();
      const statuses: Record<string, ReturnType<typeof create<typeof HealthCheckResponseSchema>>> = {};
      for (const service of ["", ...services])
        statuses[service] = create(HealthCheckResponseSchema, { status: current });
      return create(HealthListResponseSchema, { statuses });
    },
    async *watch(request, context: HandlerContext) {
      const known = request.service === "" || services.includes(request.service);
      let last: ServingStatus | undefined;
      while (!context.signal.aborted) {
        const current = known ? await status(request.service) : ServingStatus.SERVICE_UNKNOWN;
        if (current !== last) {
          last = current;
          yield create(HealthCheckResponseSchema, { status: current });
        }
        await sleep(1_000, context.signal);
      }
    },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** The standard services every listener answers, whose files reflection also serves. */
const standardFiles: readonly DescFile[] = [
  file_grpc_health_v1_health,
  reflectionV1.file_grpc_reflection_v1_reflection,
  reflectionV1alpha.file_grpc_reflection_v1alpha_reflection,
];

/** Files of the public listener's API. */
export const PUBLIC_FILES: readonly DescFile[] = [
  file_topwagers_v1_top_wagers,
  file_topwagers_v1_races,
  file_topwagers_v1_webhooks,
  file_topwagers_v1_signing,
];

interface Catalogue {
  readonly registry: Registry;
  readonly filesByName: ReadonlyMap<string, DescFile>;
  readonly services: readonly string[];
}

type ReflectionModule = typeof reflectionV1 | typeof reflectionV1alpha;

export function registerReflection(
  router: ConnectRouter,
  services: readonly string[],
  apiFiles: readonly DescFile[] = PUBLIC_FILES,
): void {
  const servedFiles = [...apiFiles, ...standardFiles];
  const registry = createRegistry(...servedFiles);
  const filesByName = new Map<string, DescFile>();
  const addFile = (file: DescFile) => {
    filesByName.set(file.proto.name, file);
    for (const dependency of file.dependencies) addFile(dependency);
  };
  for (const file of servedFiles) addFile(file);
  const catalogue: Catalogue = { registry, filesByName, services };
  for (const module of [reflectionV1, reflectionV1alpha] as const) {
    router.service(module.ServerReflection as typeof reflectionV1.ServerReflection, {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          yield answer(module, catalogue, request as reflectionV1.ServerReflectionRequest);
        }
      },
    });
  }
}

function answer(
  module: ReflectionModule,
  { registry, filesByName, services }: Catalogue,
  request: reflectionV1.ServerReflectionRequest,
): reflectionV1.ServerReflectionResponse {
  const m = module as typeof reflectionV1;
  const respond = (messageResponse: reflectionV1.ServerReflectionResponse["messageResponse"]) =>
    create(m.ServerReflectionResponseSchema, { validHost: request.host, originalRequest: request, messageResponse });
  const notFound = (what: string) =>
    respond({
      case: "errorResponse",
      value: create(m.ErrorResponseSchema, { errorCode: Code.NotFound, errorMessage: `${what} not found` }),
    });
  const files = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? notFound(what)
      : respond({
          case: "fileDescriptorResponse",
          value: create(m.FileDescriptorResponseSchema, { fileDescriptorProto: withDependencies(file) }),
        });
  const r = request.messageRequest;
  switch (r.case) {
    case "listServices":
      return respond({
        case: "listServicesResponse",
        value: create(m.ListServiceResponseSchema, {
          service: services.map((name) => create(m.ServiceResponseSchema, { name })),
        }),
      });
    case "fileByFilename":
      return files(filesByName.get(r.value), `file ${r.value}`);
    case "fileContainingSymbol": {
      const symbol = r.value.replace(/^\./, "");
      const direct = registry.get(symbol);
      // A method is named "pkg.Service.Method": look up its service.
      const owner = direct ?? registry.get(symbol.slice(0, Math.max(0, symbol.lastIndexOf("."))));
      const file = owner === undefined ? undefined : "file" in owner ? owner.file : undefined;
      return files(file, `symbol ${symbol}`);
    }
    case "fileContainingExtension":
      return notFound(`extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    case "allExtensionNumbersOfType":
      return respond({
        case: "allExtensionNumbersResponse",
        value: create(m.ExtensionNumberResponseSchema, { baseTypeName: r.value, extensionNumber: [] }),
      });
    default:
      return respond({
        case: "errorResponse",
        value: create(m.ErrorResponseSchema, {
          errorCode: Code.InvalidArgument,
          errorMessage: "empty reflection request",
        }),
      });
  }
}

/** The file and everything it imports, each serialized once, dependencies included as reflection clients expect. */
function withDependencies(file: DescFile): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const visit = (f: DescFile) => {
    if (seen.has(f.proto.name)) return;
    seen.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    for (const dependency of f.dependencies) visit(dependency);
  };
  visit(file);
  return out;
}
