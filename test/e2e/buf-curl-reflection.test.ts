/**
 * End to end with `buf curl` (a spawned binary from @bufbuild/buf): the public API discovered by
 * server reflection alone, over gRPC, Connect and gRPC-Web, with our errors and their details.
 * Moved from test/integration/health-and-reflection.test.ts, with the same server and data.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { FEB_1_2025, JAN_1_2025 } from "../support/dates.js";
import { badRequest, bufCurlDetails, errorInfo } from "../support/details.js";
import { addReflectionData, SERVICES } from "../support/reflection-data.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);

let server: TestServer;
let key: string;
let bufCacheDir: string;

beforeAll(async () => {
  server = await startTestServer("buf_curl_reflection");
  key = await addReflectionData(server.database.db);
  bufCacheDir = await mkdtemp(join(tmpdir(), "tw-buf-cache-"));
});

afterAll(async () => {
  await server?.close();
  if (bufCacheDir !== undefined) await rm(bufCacheDir, { recursive: true, force: true });
});

describe("buf curl end to end, schema from reflection only", () => {
  const procedure = () => `${server.baseUrl}/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod`;
  const period = JSON.stringify({ startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 });
  const expected = {
    data: [
      {
        username: "bob",
        avatar: DEFAULT_AVATAR_URL,
        totalWagered: 15000.5,
        totalWageredDecimal: "15000.5",
        userId: "u-2",
        rank: 1,
        weightedWagered: 15000.5,
        weightedWageredDecimal: "15000.5",
      },
      {
        username: "alice",
        avatar: "https://img.example/alice.png",
        totalWagered: 3.50000001,
        totalWageredDecimal: "3.50000001",
        userId: "u-1",
        rank: 2,
        weightedWagered: 3.50000001,
        weightedWageredDecimal: "3.50000001",
      },
    ],
  };

  async function bufCurl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      // Run from a directory without buf.yaml: the schema must come from the server.
      const { stdout, stderr } = await run(join(process.cwd(), "node_modules/.bin/buf"), ["curl", ...args], {
        cwd: bufCacheDir,
        env: { ...process.env, BUF_CACHE_DIR: join(bufCacheDir, "cache") },
        timeout: 20_000,
      });
      return { code: 0, stdout, stderr };
    } catch (reason) {
      const failure = reason as { code?: number; stdout?: string; stderr?: string };
      return { code: failure.code ?? -1, stdout: failure.stdout ?? "", stderr: failure.stderr ?? "" };
    }
  }

  /** The period with the key over HTTP/2 prior knowledge, with these options first. */
  const askPeriod = (...options: string[]) =>
    bufCurl([...options, "--http2-prior-knowledge", "-H", `Authorization: Bearer ${key}`, "-d", period, procedure()]);

  for (const protocol of ["grpc", "connect", "grpcweb"] as const) {
    it(`--protocol ${protocol}: the exact JSON answer`, async () => {
      const result = await askPeriod("--protocol", protocol);
      expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
      expect(result.stdout).toBe(`${JSON.stringify(expected, null, 2)}\n`);
    });
  }

  it("works over reflection v1alpha too (older grpcurl, Postman)", async () => {
    const result = await askPeriod("--protocol", "grpc", "--reflect-protocol", "grpc-v1alpha");
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(result.stdout)).toEqual(expected);
  });

  it("reports our errors: unauthenticated without a key, invalid_argument naming the missing field", async () => {
    const noKey = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "-d", period, procedure()]);
    expect(noKey.code).not.toBe(0);
    expect(noKey.stdout).toBe("");
    expect(JSON.parse(noKey.stderr)).toEqual({
      code: "unauthenticated",
      message: "missing or invalid API key (send Authorization Bearer with your key)",
      details: bufCurlDetails(errorInfo("UNAUTHENTICATED")),
    });
    const missing = await bufCurl([
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${key}`,
      "-d",
      JSON.stringify({ startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1 }),
      procedure(),
    ]);
    expect(missing.code).not.toBe(0);
    expect(JSON.parse(missing.stderr)).toEqual({
      code: "invalid_argument",
      message: "numUsers is required",
      details: bufCurlDetails(errorInfo("INVALID_ARGUMENT"), badRequest(["num_users", "numUsers is required"])),
    });
  });

  it("--list-services and --list-methods show the public API", async () => {
    const base = ["--protocol", "grpc", "--http2-prior-knowledge"];
    const services = await bufCurl([...base, "--list-services", server.baseUrl]);
    expect({ code: services.code, stderr: services.stderr }).toEqual({ code: 0, stderr: "" });
    console.log(JSON.stringify(services.stdout));
    expect(services.stdout.trim().split("\n").sort()).toEqual([...SERVICES].sort());
    const methods = await bufCurl([...base, "--list-methods", server.baseUrl]);
    expect({ code: methods.code, stderr: methods.stderr }).toEqual({ code: 0, stderr: "" });
    console.log(JSON.stringify(methods.stdout));
    expect(methods.stdout.trim().split("\n")).toContain("topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod");
    expect(methods.stdout.trim().split("\n")).toContain("grpc.health.v1.Health/Check");
  });
});
