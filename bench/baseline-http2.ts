/**
 * Baseline of the protocols benchmark: a bare node:http2 (h2c) server doing
 * the per-request work of a topwagers cache hit (Bearer parsing, SHA-256 of the
 * key, constant-time comparison, one rate-limiter consume) and answering the
 * same cached bytes: the REST JSON body, or, for a gRPC request, the framed
 * protobuf answer with `grpc-status: 0` trailers. No framework at all.
 *
 * Env: PORT, KEY_HASH (hex), REST_BODY_FILE, GRPC_BODY_FILE (a framed message).
 */
import { hash as digest, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { listenAndSayPort } from "./baseline-listen.js";

const keyHash = Buffer.from(process.env.KEY_HASH ?? "", "hex");
const restBody = readFileSync(process.env.REST_BODY_FILE ?? "/dev/null");
const grpcBody = readFileSync(process.env.GRPC_BODY_FILE ?? "/dev/null");
const limiter = new RateLimiterMemory({ points: 1_000_000_000, duration: 60 });

const server = http2.createServer({ settings: { maxConcurrentStreams: 256 } });
server.on("stream", (stream, headers) => {
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(String(headers.authorization ?? ""));
  const hash = digest("sha256", match?.[1] ?? "", "buffer");
  if (match === null || !timingSafeEqual(hash, keyHash)) {
    stream.respond({ ":status": 401 });
    stream.end();
    return;
  }
  const grpc = String(headers["content-type"] ?? "").startsWith("application/grpc");
  stream.resume();
  stream.once("end", () => {
    limiter.consume(hash.toString("base64")).then((result) => {
      const rate = {
        "ratelimit-policy": `"default";q=1000000000;w=60`,
        ratelimit: `"default";r=${result.remainingPoints};t=${Math.ceil(result.msBeforeNext / 1000)}`,
      };
      if (grpc) {
        stream.respond(
          { ":status": 200, "content-type": "application/grpc+proto", ...rate },
          { waitForTrailers: true },
        );
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(grpcBody);
      } else {
        stream.respond({
          ":status": 200,
          "content-type": "application/json; charset=utf-8",
          "cache-control": "private, max-age=1",
          "content-length": String(restBody.length),
          ...rate,
        });
        stream.end(restBody);
      }
    });
  });
});
listenAndSayPort(server);
