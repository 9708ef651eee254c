/**
 * docs/operations.md's listener table names every RPC service each listener serves (issue 52, item 4): the
 * fully qualified names in a row's "serves" cell are exactly what that listener's gRPC server reflection lists
 * (asked over gRPC, as `buf curl --list-services` and grpcurl ask), for the public port and the internal one.
 */
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, describe, expect, it } from "vitest";
import { ServerReflection, ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { TEST_INGEST_TOKEN, useIngestServers } from "../support/ingest.js";

const OPERATIONS = readFileSync("docs/operations.md", "utf8");

const servers = useIngestServers("listener_table", {
  INGEST_TOKEN: TEST_INGEST_TOKEN,
  ADMIN_TOKEN: "test-admin-token-0123456789abcdef",
});
const sessions: Http2SessionManager[] = [];
afterAll(() => {
  for (const session of sessions) session.abort();
});

/** The fully qualified service names (`a.b.Service`) in the "serves" cell of the listener table's row. */
function documentedServices(listener: "public" | "internal"): string[] {
  const row = OPERATIONS.split("\n").find((line) => line.startsWith(`| ${listener} `));
  if (row === undefined) throw new Error(`no ${listener} row in docs/operations.md's listener table`);
  const serves = row.split("|")[3] as string;
  return [...serves.matchAll(/`((?:[a-z][a-z0-9]*\.)+[A-Z][A-Za-z0-9]*)`/g)].map((m) => m[1] as string);
}

/** What the listener's reflection (v1) lists, over gRPC. */
async function reflectedServices(baseUrl: string): Promise<string[]> {
  const sessionManager = new Http2SessionManager(baseUrl);
  sessions.push(sessionManager);
  const reflection = createClient(ServerReflection, createGrpcTransport({ baseUrl, sessionManager }));
  async function* ask() {
    yield create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } });
  }
  const names: string[] = [];
  for await (const answer of reflection.serverReflectionInfo(ask())) {
    if (answer.messageResponse.case !== "listServicesResponse")
      throw new Error(`unexpected ${answer.messageResponse.case}`);
    names.push(...answer.messageResponse.value.service.map((service) => service.name));
  }
  return names;
}

describe("docs/operations.md's listener table", () => {
  it("lists every service the public port serves, and only those", async () => {
    const documented = documentedServices("public");
    expect(documented).toContain("topwagers.v1.TopWagersService");
    expect([...documented].sort()).toEqual((await reflectedServices(servers.publicUrl)).sort());
  });

  it("lists every service the internal listener serves, and only those", async () => {
    const documented = documentedServices("internal");
    expect(documented).toEqual(
      expect.arrayContaining([
        "topwagers.v1.WagerIngestService",
        "topwagers.v1.ApiKeyService",
        "topwagers.v1.RaceService",
        "topwagers.v1.WebhookService",
      ]),
    );
    expect([...documented].sort()).toEqual((await reflectedServices(servers.internalUrl)).sort());
  });
});
