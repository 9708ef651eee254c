/**
 * Baseline of the protocols benchmark: Connect itself, bare. connect-node's
 * adapter on a node:http2 (h2c) server with one method, TopWagersService's,
 * returning a fixed answer of the same size as topwagers' (decoded once from
 * ANSWER_FILE, protobuf binary). No key check, limiter, metrics or cache: it
 * is what Connect allows on this machine for gRPC, Connect binary and JSON.
 *
 * Env: PORT, ANSWER_FILE.
 */
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { GetTopAffiliateWagersByPeriodResponseSchema, TopWagersService } from "../gen/topwagers/v1/top_wagers_pb.js";

const answer = fromBinary(GetTopAffiliateWagersByPeriodResponseSchema, readFileSync(process.env.ANSWER_FILE ?? ""));
const handler = connectNodeAdapter({
  routes(router) {
    router.service(TopWagersService, { getTopAffiliateWagersByPeriod: () => answer });
  },
});
const server = http2.createServer({ settings: { maxConcurrentStreams: 256 } }, handler);
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
