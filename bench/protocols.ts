/**
 * Protocols scenario: topwagers' warm-cache throughput on every protocol
 * against bare baselines in separate processes on the same Node, driven by C
 * load generators (wrk for HTTP/1.1, h2load for HTTP/2 and gRPC), in
 * alternating rounds (baseline, topwagers, baseline, topwagers, ...).
 *
 *   npm run bench -- protocols [--duration 8] [--rounds 2] [--connections 16] [--streams 8] [--profile DIR] [--only rest] [--no-pin]
 *
 * Paths and their baselines:
 *   REST over HTTP/1.1 (wrk)         vs a bare node:http server doing the same key hash, limiter call and bytes
 *   REST over h2c (h2load)           vs a bare node:http2 server doing the same
 *   gRPC, Connect binary, Connect JSON over h2c (h2load)
 *                                    vs a bare connectNodeAdapter returning a fixed answer of the same size
 * The node:http2 server also answers gRPC-shaped bytes, shown for scale (what HTTP/2 itself allows).
 * With --profile DIR, topwagers runs under --cpu-prof and writes its profile there at the end
 * (summarise it with: npm run bench -- profile DIR/<file>.cpuprofile).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs, promisify } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  GetTopAffiliateWagersByPeriodRequestSchema,
  GetTopAffiliateWagersByPeriodResponseSchema,
  TopWagersService,
} from "../gen/topwagers/v1/top_wagers_pb.js";
import { OCT_1, prepareDatabase } from "./http.js";
import { fmt, machineDescription, percentile, startChild, table } from "./support.js";

const run = promisify(execFile);

/**
 * With --pin (the default where taskset exists and there are two or more cores), every server runs on
 * CPU 0 and the load generator on CPU 1: the two no longer compete for a core, which otherwise makes
 * the ratios swing by ±15 % from round to round on two cores.
 */
let pinLoad: readonly string[] = [];

/** Runs a load generator, on CPU 1 when pinning. */
function runLoad(tool: string, args: readonly string[], maxBuffer: number) {
  return pinLoad.length === 0
    ? run(tool, [...args], { maxBuffer })
    : run(pinLoad[0] as string, [...pinLoad.slice(1), tool, ...args], { maxBuffer });
}

/** Moves a running server (all its threads) to CPU 0. */
async function pinServer(pid: number | undefined): Promise<void> {
  if (pinLoad.length === 0 || pid === undefined) return;
  await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
}

interface Load {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failed: number;
}

async function have(tool: string): Promise<boolean> {
  try {
    await run("which", [tool]);
    return true;
  } catch {
    return false;
  }
}

/** wrk, one thread, `connections` connections, POST with a body (Lua script). */
async function wrk(
  url: string,
  headers: Record<string, string>,
  bodyFile: string,
  seconds: number,
  connections: number,
  dir: string,
): Promise<Load> {
  const script = join(dir, "post.lua");
  const lines = [
    'wrk.method = "POST"',
    `wrk.body = ${JSON.stringify(readFileSync(bodyFile, "utf8"))}`,
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`),
    "function response(status, headers, body) if status ~= 200 then failed = (failed or 0) + 1 end end",
  ];
  writeFileSync(script, `${lines.join("\n")}\n`);
  const { stdout } = await runLoad(
    "wrk",
    ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-s", script, url],
    1 << 20,
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const ms = (label: string) => {
    const m = new RegExp(`\\s${label}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout);
    if (m === null) return Number.NaN;
    const value = Number(m[1]);
    return m[2] === "us" ? value / 1000 : m[2] === "s" ? value * 1000 : value;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  return { rps, p50Ms: ms("50"), p99Ms: ms("99"), failed: non2xx };
}

/** h2load, one thread, `connections` x `streams`, POST with a body; latencies from its per-request log. */
async function h2load(
  url: string,
  headers: Record<string, string>,
  bodyFile: string,
  seconds: number,
  connections: number,
  streams: number,
  dir: string,
): Promise<Load> {
  const log = join(dir, `h2load-${Date.now()}.log`);
  const args = ["-t1", `-c${connections}`, `-m${streams}`, "-D", String(seconds), "-d", bodyFile, `--log-file=${log}`];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  const { stdout } = await runLoad("h2load", [...args, url], 1 << 22);
  const rps = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout)?.[1]);
  const statusLine = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(stdout);
  const failed =
    Number(statusLine?.[3] ?? 0) + Number(statusLine?.[4] ?? 0) + Number(/(\d+) failed/.exec(stdout)?.[1] ?? 0);
  const times = readFileSync(log, "utf8")
    .trim()
    .split("\n")
    .map((line) => Number(line.split("\t")[2]) / 1000)
    .filter((t) => Number.isFinite(t))
    .sort((a, b) => a - b);
  rmSync(log, { force: true });
  return { rps, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), failed };
}

export async function runProtocolsBench(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      duration: { type: "string", default: "8" },
      rounds: { type: "string", default: "2" },
      connections: { type: "string", default: "16" },
      streams: { type: "string", default: "8" },
      profile: { type: "string" },
      only: { type: "string" },
      pin: { type: "boolean", default: true },
    },
    allowNegative: true,
  });
  const missing = [];
  if (!(await have("wrk"))) missing.push("wrk");
  if (!(await have("h2load"))) missing.push("h2load");
  if (missing.length > 0) {
    throw new Error(`${missing.join(" and ")} not found: install with  apt-get install nghttp2-client wrk`);
  }
  const pin = values.pin === true && os.cpus().length >= 2 && (await have("taskset"));
  pinLoad = pin ? ["taskset", "-c", "1"] : [];
  const seconds = Number(values.duration);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const streams = Number(values.streams);
  const dir = mkdtempSync(join(tmpdir(), "topwagers-protocols-"));
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/topwagers_bench_protocols";
  const key = await prepareDatabase(databaseUrl);
  const distDir = new URL(".", import.meta.url).pathname;
  const service = await startChild(
    join(distDir, "../src/main.js"),
    {
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      CACHE_TTL_MS: "600000",
      RATE_LIMIT_POINTS: "1000000000",
      INTERNAL_PORT: "0",
      LOG_LEVEL: "info", // the "listening" line is how the bench learns the port
    },
    (line) => line.msg?.startsWith("topwagers listening") === true,
    values.profile === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", values.profile],
  );
  const base = `http://127.0.0.1:${service.port}`;
  const period = { startTimestamp: OCT_1, endTimestamp: OCT_1 + 15 * 86_400 - 1, numUsers: 10 };
  const auth = { authorization: `Bearer ${key}` };
  // The bodies every load generator sends, and the answers the baselines give back.
  const files = {
    restRequest: join(dir, "rest.json"),
    restAnswer: join(dir, "rest-answer.json"),
    grpcRequest: join(dir, "grpc.bin"),
    grpcAnswer: join(dir, "grpc-answer.bin"),
    protoRequest: join(dir, "connect.bin"),
    answer: join(dir, "answer.bin"),
  };
  writeFileSync(files.restRequest, JSON.stringify(period));
  const restAnswer = await fetch(`${base}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify(period),
  });
  if (restAnswer.status !== 200) throw new Error(`topwagers answered ${restAnswer.status} to the warm-up`);
  writeFileSync(files.restAnswer, Buffer.from(await restAnswer.arrayBuffer()));
  const request = create(GetTopAffiliateWagersByPeriodRequestSchema, {
    startTimestamp: BigInt(period.startTimestamp),
    endTimestamp: BigInt(period.endTimestamp),
    numUsers: period.numUsers,
  });
  const requestBytes = toBinary(GetTopAffiliateWagersByPeriodRequestSchema, request);
  writeFileSync(files.protoRequest, requestBytes);
  writeFileSync(files.grpcRequest, frame(requestBytes));
  const answer = await createClient(
    TopWagersService,
    createGrpcTransport({ baseUrl: base }),
  ).getTopAffiliateWagersByPeriod(request, { headers: auth });
  const answerBytes = toBinary(GetTopAffiliateWagersByPeriodResponseSchema, answer);
  writeFileSync(files.answer, answerBytes);
  writeFileSync(files.grpcAnswer, frame(answerBytes));
  const keyHash = createHash("sha256").update(key).digest("hex");
  const bareHttp = await startChild(join(distDir, "baseline-server.js"), {
    PORT: "0",
    KEY_HASH: keyHash,
    BODY_FILE: files.restAnswer,
  });
  const bareHttp2 = await startChild(join(distDir, "baseline-http2.js"), {
    PORT: "0",
    KEY_HASH: keyHash,
    REST_BODY_FILE: files.restAnswer,
    GRPC_BODY_FILE: files.grpcAnswer,
  });
  const bareConnect = await startChild(join(distDir, "baseline-connect.js"), { PORT: "0", ANSWER_FILE: files.answer });
  for (const server of [service, bareHttp, bareHttp2, bareConnect]) await pinServer(server.child.pid);
  const procedure = "/topwagers.v1.TopWagersService/GetTopAffiliateWagersByPeriod";
  const url = (port: number, path: string) => `http://127.0.0.1:${port}${path}`;
  const grpcHeaders = { ...auth, "content-type": "application/grpc+proto", te: "trailers" };
  const protoHeaders = { ...auth, "content-type": "application/proto", "connect-protocol-version": "1" };
  const jsonHeaders = { ...auth, "content-type": "application/json", "connect-protocol-version": "1" };
  const h2 = (port: number, path: string, headers: Record<string, string>, body: string) => () =>
    h2load(url(port, path), headers, body, seconds, connections, streams, dir);
  const rest = "/top-affiliate-wagers-by-period";
  const paths: { name: string; target: number; baseline: [string, () => Promise<Load>]; ours: () => Promise<Load> }[] =
    [
      {
        name: "REST, HTTP/1.1 (wrk)",
        target: 75,
        baseline: [
          "bare node:http",
          () =>
            wrk(
              url(bareHttp.port, rest),
              { ...auth, "content-type": "application/json" },
              files.restRequest,
              seconds,
              connections * streams,
              dir,
            ),
        ],
        ours: () =>
          wrk(
            url(service.port, rest),
            { ...auth, "content-type": "application/json" },
            files.restRequest,
            seconds,
            connections * streams,
            dir,
          ),
      },
      {
        name: "REST, h2c (h2load)",
        target: 75,
        baseline: [
          "bare node:http2",
          h2(bareHttp2.port, rest, { ...auth, "content-type": "application/json" }, files.restRequest),
        ],
        ours: h2(service.port, rest, { ...auth, "content-type": "application/json" }, files.restRequest),
      },
      {
        name: "gRPC, h2c (h2load)",
        target: 90,
        baseline: ["bare Connect handler", h2(bareConnect.port, procedure, grpcHeaders, files.grpcRequest)],
        ours: h2(service.port, procedure, grpcHeaders, files.grpcRequest),
      },
      {
        name: "Connect binary, h2c (h2load)",
        target: 90,
        baseline: ["bare Connect handler", h2(bareConnect.port, procedure, protoHeaders, files.protoRequest)],
        ours: h2(service.port, procedure, protoHeaders, files.protoRequest),
      },
      {
        name: "Connect JSON, h2c (h2load)",
        target: 90,
        baseline: ["bare Connect handler", h2(bareConnect.port, procedure, jsonHeaders, files.restRequest)],
        ours: h2(service.port, procedure, jsonHeaders, files.restRequest),
      },
    ];
  // --only rest|grpc|binary|json|h1|h2c: run the paths whose name contains it (case-insensitive), e.g. to profile one.
  const only = values.only?.toLowerCase();
  if (only !== undefined) {
    for (let i = paths.length - 1; i >= 0; i--) if (!paths[i]?.name.toLowerCase().includes(only)) paths.splice(i, 1);
  }
  const rows: (string | number)[][] = [];
  const summary: (string | number)[][] = [];
  try {
    // Warm-up: JIT and connections of every server on every path.
    for (const path of paths) {
      await path.baseline[1]();
      await path.ours();
    }
    const grpcShaped = await h2(bareHttp2.port, procedure, grpcHeaders, files.grpcRequest)();
    rows.push([
      "gRPC-shaped bytes, h2c",
      "bare node:http2 (scale)",
      "-",
      fmt(grpcShaped.rps, 0),
      fmt(grpcShaped.p50Ms, 2),
      fmt(grpcShaped.p99Ms, 2),
      grpcShaped.failed,
      "",
    ]);
    for (const path of paths) {
      const ratios: number[] = [];
      for (let round = 1; round <= rounds; round++) {
        const baseline = await path.baseline[1]();
        const ours = await path.ours();
        const ratio = (100 * ours.rps) / baseline.rps;
        ratios.push(ratio);
        rows.push([
          path.name,
          path.baseline[0],
          round,
          fmt(baseline.rps, 0),
          fmt(baseline.p50Ms, 2),
          fmt(baseline.p99Ms, 2),
          baseline.failed,
          "",
        ]);
        rows.push([
          path.name,
          "topwagers",
          round,
          fmt(ours.rps, 0),
          fmt(ours.p50Ms, 2),
          fmt(ours.p99Ms, 2),
          ours.failed,
          `${fmt(ratio, 0)}%`,
        ]);
      }
      const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
      summary.push([
        path.name,
        path.baseline[0],
        `${ratios.map((r) => fmt(r, 0)).join("%, ")}%`,
        `${fmt(mean, 0)}%`,
        `>= ${path.target}%`,
        mean >= path.target ? "met" : "short",
      ]);
    }
  } finally {
    await Promise.all([service.stop(), bareHttp.stop(), bareHttp2.stop(), bareConnect.stop()]);
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    [
      "",
      `command: npm run bench -- protocols --duration ${seconds} --rounds ${rounds} --connections ${connections} --streams ${streams}${values.profile === undefined ? "" : ` --profile ${values.profile}`}${only === undefined ? "" : ` --only ${only}`}${values.pin === true ? "" : " --no-pin"}`,
      `machine: ${await machineDescription(databaseUrl)}`,
      `load: h2load -t1 -c${connections} -m${streams} (HTTP/2), wrk -t1 -c${connections * streams} (HTTP/1.1), ${seconds} s per run, loopback; every server a separate Node process${pin ? " (servers on CPU 0, load generator on CPU 1; --no-pin to share)" : ""}; warm cache, the same 10-entry answer`,
      "",
      table(["path", "server", "round", "req/s", "p50 ms", "p99 ms", "failed", "topwagers / baseline"], rows),
      "",
      table(["path", "baseline", "ratio per round", "mean", "target", ""], summary),
      "",
    ].join("\n"),
  );
}

/** A gRPC length-prefixed message: flag 0, 4-byte big-endian length, bytes. */
function frame(bytes: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([header, bytes]);
}
