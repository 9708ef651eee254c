/**
 * The standard services tools expect on the public port, without an API key:
 * grpc.health.v1.Health (Check, List, Watch) and server reflection v1 and
 * v1alpha, checked with connect-es and with grpc-js on the published protos.
 * `buf curl` discovering the API by reflection alone: test/e2e/buf-curl-reflection.test.ts.
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  MethodOptions_IdempotencyLevel,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { addReflectionData, SERVICES } from "../support/reflection-data.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
const sessions: Http2SessionManager[] = [];
const grpcClients: grpc.Client[] = [];

function h2Session(): Http2SessionManager {
  const manager = new Http2SessionManager(server.baseUrl);
  sessions.push(manager);
  return manager;
}

function grpcJsClient(): grpc.Client {
  const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  grpcClients.push(client);
  return client;
}

function loadMethods(file: string, service: string): protoLoader.ServiceDefinition {
  const definition = protoLoader.loadSync(file, { longs: String, enums: String, defaults: true, oneofs: true });
  return definition[service] as protoLoader.ServiceDefinition;
}

function method(service: protoLoader.ServiceDefinition, name: string): protoLoader.MethodDefinition<object, object> {
  const found = service[name];
  if (found === undefined) throw new Error(`no method ${name}`);
  return found;
}

beforeAll(async () => {
  server = await startTestServer("health_reflection");
  await addReflectionData(server.database.db);
});

afterAll(async () => {
  for (const client of grpcClients) client.close();
  for (const manager of sessions) manager.abort();
  await server?.close();
});

describe("grpc.health.v1.Health through connect-es, without an API key", () => {
  const transports: [string, () => Transport][] = [
    ["gRPC h2c", () => createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: h2Session() })],
    ["Connect JSON HTTP/1.1", () => createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" })],
  ];

  for (const [name, transport] of transports) {
    it(`${name}: Check, unknown service, List`, async () => {
      const health = createClient(Health, transport());
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
      expect((await health.check({ service: "topwagers.v1.TopWagersService" })).status).toBe(ServingStatus.SERVING);
      const error = await health.check({ service: "topwagers.v1.NoSuchService" }).then(
        () => undefined,
        (reason: unknown) => ConnectError.from(reason),
      );
      expect([error?.code, error?.rawMessage]).toEqual([Code.NotFound, "unknown service topwagers.v1.NoSuchService"]);
      const list = await health.list({});
      expect(Object.fromEntries(Object.entries(list.statuses).map(([service, s]) => [service, s.status]))).toEqual({
        "": ServingStatus.SERVING,
        "topwagers.v1.TopWagersService": ServingStatus.SERVING,
        "topwagers.v1.RaceService": ServingStatus.SERVING,
        "topwagers.v1.WebhookService": ServingStatus.SERVING,
        "topwagers.v1.SigningKeyService": ServingStatus.SERVING,
        "grpc.health.v1.Health": ServingStatus.SERVING,
        "grpc.reflection.v1.ServerReflection": ServingStatus.SERVING,
        "grpc.reflection.v1alpha.ServerReflection": ServingStatus.SERVING,
      });
    });
  }

  it("answers even when a junk Authorization header is sent", async () => {
    const health = createClient(Health, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));
    const response = await health.check({ service: "" }, { headers: { authorization: "Bearer junk" } });
    expect(response.status).toBe(ServingStatus.SERVING);
  });

  it("Watch streams the current status first (SERVICE_UNKNOWN for an unknown service)", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: server.baseUrl, sessionManager: h2Session() }));
    for (const [service, expected] of [
      ["", ServingStatus.SERVING],
      ["topwagers.v1.NoSuchService", ServingStatus.SERVICE_UNKNOWN],
    ] as const) {
      const abort = new AbortController();
      let first: ServingStatus | undefined;
      for await (const response of health.watch({ service }, { signal: abort.signal })) {
        first = response.status;
        break;
      }
      abort.abort();
      expect(first).toBe(expected);
    }
  });
});

describe("grpc.health.v1.Health through grpc-js on the published proto", () => {
  const health = () => loadMethods("proto-std/grpc/health/v1/health.proto", "grpc.health.v1.Health");

  function unary(m: protoLoader.MethodDefinition<object, object>, request: object) {
    const client = grpcJsClient();
    return new Promise<{ code: number; details: string; response: unknown }>((resolve) => {
      client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, (error, response) => {
        resolve(
          error === null
            ? { code: 0, details: "", response: JSON.parse(JSON.stringify(response)) }
            : { code: error.code, details: error.details, response: undefined },
        );
      });
    });
  }

  it("Check, unknown service, List", async () => {
    const check = method(health(), "Check");
    expect(await unary(check, { service: "" })).toEqual({ code: 0, details: "", response: { status: "SERVING" } });
    expect(await unary(check, { service: "topwagers.v1.TopWagersService" })).toEqual({
      code: 0,
      details: "",
      response: { status: "SERVING" },
    });
    expect(await unary(check, { service: "topwagers.v1.NoSuchService" })).toEqual({
      code: grpc.status.NOT_FOUND,
      details: "unknown service topwagers.v1.NoSuchService",
      response: undefined,
    });
    expect(await unary(method(health(), "List"), {})).toEqual({
      code: 0,
      details: "",
      response: {
        statuses: {
          "": { status: "SERVING" },
          "topwagers.v1.TopWagersService": { status: "SERVING" },
          "topwagers.v1.RaceService": { status: "SERVING" },
          "topwagers.v1.WebhookService": { status: "SERVING" },
          "topwagers.v1.SigningKeyService": { status: "SERVING" },
          "grpc.health.v1.Health": { status: "SERVING" },
          "grpc.reflection.v1.ServerReflection": { status: "SERVING" },
          "grpc.reflection.v1alpha.ServerReflection": { status: "SERVING" },
        },
      },
    });
  });

  it("does not echo an unknown service name that grpc-js would show percent-escaped", async () => {
    const result = await unary(method(health(), "Check"), { service: "no/such:service" });
    expect(result.code).toBe(grpc.status.NOT_FOUND);
    expect(result.details).not.toMatch(/%[0-9A-Fa-f]{2}/);
    expect(result.details).not.toMatch(/[;,/?:@&=+$#]/);
    expect(result.details).toBe(
      "unknown service. A service name is a fully qualified protobuf name like topwagers.v1.TopWagersService",
    );
  });
});

/** One reflection stream: sends every request, then collects every answer in order. */
async function reflect(version: "v1" | "v1alpha", requests: object[]): Promise<ReflectionAnswer[]> {
  const service = loadMethods(
    `proto-std/grpc/reflection/${version}/reflection.proto`,
    `grpc.reflection.${version}.ServerReflection`,
  );
  const m = method(service, "ServerReflectionInfo");
  const call = grpcJsClient().makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize);
  const answers: ReflectionAnswer[] = [];
  const done = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
  call.on("data", (answer: ReflectionAnswer) => answers.push(answer));
  for (const request of requests) call.write(request);
  call.end();
  const status = await done;
  expect([status.code, status.details]).toEqual([grpc.status.OK, ""]);
  return answers;
}

interface ReflectionAnswer {
  validHost: string;
  originalRequest: Record<string, unknown>;
  messageResponse: string;
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  listServicesResponse?: { service: { name: string }[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

function fileNames(answer: ReflectionAnswer | undefined): string[] {
  return (answer?.fileDescriptorResponse?.fileDescriptorProto ?? []).map(
    (bytes) => fromBinary(FileDescriptorProtoSchema, new Uint8Array(bytes)).name,
  );
}

function firstFile(answer: ReflectionAnswer | undefined): FileDescriptorProto {
  const bytes = answer?.fileDescriptorResponse?.fileDescriptorProto[0];
  if (bytes === undefined) throw new Error(`no file descriptor in ${JSON.stringify(answer)}`);
  return fromBinary(FileDescriptorProtoSchema, new Uint8Array(bytes));
}

function expectTopWagersFile(file: FileDescriptorProto): void {
  expect(file.name).toBe("topwagers/v1/top_wagers.proto");
  expect(file.package).toBe("topwagers.v1");
  expect(file.syntax).toBe("proto3");
  expect(file.dependency).toEqual([]);
  expect(file.messageType.map((message) => message.name)).toEqual([
    "GetTopAffiliateWagersByPeriodRequest",
    "GetTopAffiliateWagersByPeriodResponse",
    "TopWagerEntry",
    "WatchTopAffiliateWagersByPeriodRequest",
    "WatchTopAffiliateWagersByPeriodResponse",
    "SignedBoard",
  ]);
  expect(
    file.service.map((service) => ({
      name: service.name,
      methods: service.method.map((m) => ({
        name: m.name,
        inputType: m.inputType,
        outputType: m.outputType,
        clientStreaming: m.clientStreaming,
        serverStreaming: m.serverStreaming,
        idempotency: m.options?.idempotencyLevel,
      })),
    })),
  ).toEqual([
    {
      name: "TopWagersService",
      methods: [
        {
          name: "GetTopAffiliateWagersByPeriod",
          inputType: ".topwagers.v1.GetTopAffiliateWagersByPeriodRequest",
          outputType: ".topwagers.v1.GetTopAffiliateWagersByPeriodResponse",
          clientStreaming: false,
          serverStreaming: false,
          idempotency: MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS,
        },
        {
          name: "WatchTopAffiliateWagersByPeriod",
          inputType: ".topwagers.v1.WatchTopAffiliateWagersByPeriodRequest",
          outputType: ".topwagers.v1.WatchTopAffiliateWagersByPeriodResponse",
          clientStreaming: false,
          serverStreaming: true,
          idempotency: undefined,
        },
      ],
    },
  ]);
  // Explicit presence survives reflection, so reflection-driven clients can leave a field unset.
  const request = file.messageType[0];
  expect(
    request?.field.map((f) => ({
      name: f.name,
      number: f.number,
      type: f.type,
      label: f.label,
      opt: f.proto3Optional,
    })),
  ).toEqual([
    {
      name: "start_timestamp",
      number: 1,
      type: FieldDescriptorProto_Type.INT64,
      label: FieldDescriptorProto_Label.OPTIONAL,
      opt: true,
    },
    {
      name: "end_timestamp",
      number: 2,
      type: FieldDescriptorProto_Type.INT64,
      label: FieldDescriptorProto_Label.OPTIONAL,
      opt: true,
    },
    {
      name: "num_users",
      number: 3,
      type: FieldDescriptorProto_Type.INT32,
      label: FieldDescriptorProto_Label.OPTIONAL,
      opt: true,
    },
    {
      name: "rank_by",
      number: 4,
      type: FieldDescriptorProto_Type.ENUM,
      label: FieldDescriptorProto_Label.OPTIONAL,
      opt: true,
    },
    {
      name: "signed",
      number: 5,
      type: FieldDescriptorProto_Type.BOOL,
      label: FieldDescriptorProto_Label.OPTIONAL,
      opt: true,
    },
  ]);
  expect(file.messageType[2]?.field.map((f) => [f.name, f.number, f.type])).toEqual([
    ["username", 1, FieldDescriptorProto_Type.STRING],
    ["avatar", 2, FieldDescriptorProto_Type.STRING],
    ["total_wagered", 3, FieldDescriptorProto_Type.DOUBLE],
    ["total_wagered_decimal", 4, FieldDescriptorProto_Type.STRING],
    ["user_id", 5, FieldDescriptorProto_Type.STRING],
    ["rank", 6, FieldDescriptorProto_Type.UINT32],
    ["weighted_wagered", 7, FieldDescriptorProto_Type.DOUBLE],
    ["weighted_wagered_decimal", 8, FieldDescriptorProto_Type.STRING],
  ]);
}

for (const version of ["v1", "v1alpha"] as const) {
  describe(`server reflection ${version} through a grpc-js stream, without an API key`, () => {
    it("lists exactly the services of the public port", async () => {
      const [answer] = await reflect(version, [{ host: "", listServices: "" }]);
      expect(answer).toEqual({
        validHost: "",
        originalRequest: { host: "", listServices: "", messageRequest: "listServices" },
        listServicesResponse: { service: SERVICES.map((name) => ({ name })) },
        messageResponse: "listServicesResponse",
      });
    });

    it("answers file_containing_symbol for the service, a method and a message, and file_by_filename", async () => {
      const answers = await reflect(version, [
        { fileContainingSymbol: "topwagers.v1.TopWagersService" },
        { fileContainingSymbol: "topwagers.v1.TopWagersService.GetTopAffiliateWagersByPeriod" },
        { fileContainingSymbol: "topwagers.v1.TopWagerEntry" },
        { fileByFilename: "topwagers/v1/top_wagers.proto" },
        { fileByFilename: "grpc/health/v1/health.proto" },
        { fileContainingSymbol: `grpc.reflection.${version}.ServerReflection` },
      ]);
      expect(answers.map((a) => a.messageResponse)).toEqual(Array(6).fill("fileDescriptorResponse"));
      for (const answer of answers.slice(0, 4)) {
        expect(fileNames(answer)).toEqual(["topwagers/v1/top_wagers.proto"]);
        expectTopWagersFile(firstFile(answer));
      }
      expect(answers[1]?.originalRequest).toEqual({
        host: "",
        fileContainingSymbol: "topwagers.v1.TopWagersService.GetTopAffiliateWagersByPeriod",
        messageRequest: "fileContainingSymbol",
      });
      expect(fileNames(answers[4])).toEqual(["grpc/health/v1/health.proto"]);
      expect(firstFile(answers[4]).service.map((s) => [s.name, s.method.map((m) => m.name)])).toEqual([
        ["Health", ["Check", "List", "Watch"]],
      ]);
      expect(fileNames(answers[5])).toEqual([`grpc/reflection/${version}/reflection.proto`]);
    });

    it("answers an unknown symbol or file with error_response NOT_FOUND, and the stream goes on", async () => {
      const answers = await reflect(version, [
        { fileContainingSymbol: "topwagers.v1.NoSuchThing" },
        { fileByFilename: "topwagers/v1/nope.proto" },
        { listServices: "*" },
      ]);
      expect(answers.map((a) => [a.messageResponse, a.errorResponse])).toEqual([
        [
          "errorResponse",
          { errorCode: grpc.status.NOT_FOUND, errorMessage: "symbol topwagers.v1.NoSuchThing not found" },
        ],
        ["errorResponse", { errorCode: grpc.status.NOT_FOUND, errorMessage: "file topwagers/v1/nope.proto not found" }],
        ["listServicesResponse", undefined],
      ]);
    });
  });
}
