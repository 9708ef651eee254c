/**
 * The HTTP benchmark's baseline: a bare node:http server that does the same
 * per-request work as our REST path on a cache hit (Bearer parsing, SHA-256 of
 * the key, constant-time hash comparison, one rate-limiter consume, the
 * RateLimit headers) and writes the same cached bytes. It shows what the
 * machine can do with no framework at all.
 *
 * Env: PORT, KEY_HASH (hex SHA-256 of the key), BODY_FILE (bytes to answer with).
 */
import { hash as digest, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { listenAndSayPort } from "./baseline-listen.js";

const keyHash = Buffer.from(process.env.KEY_HASH ?? "", "hex");
const body = readFileSync(process.env.BODY_FILE ?? "/dev/null");
const limiter = new RateLimiterMemory({ points: 1_000_000_000, duration: 60 });

// Idle keep-alive connections are kept as long as topwagers keeps them (65 s; Node's default is 5 s, which
// a slow run, e.g. under valgrind, outlasts between two requests of one connection).
const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
  const hash = digest("sha256", match?.[1] ?? "", "buffer");
  if (match === null || !timingSafeEqual(hash, keyHash)) {
    res.writeHead(401).end();
    return;
  }
  req.resume();
  req.once("end", () => {
    limiter.consume(hash.toString("base64")).then((result) => {
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "ratelimit-policy": `"default";q=1000000000;w=60`,
        ratelimit: `"default";r=${result.remainingPoints};t=${Math.ceil(result.msBeforeNext / 1000)}`,
        "cache-control": "private, max-age=600",
        "content-length": String(body.length),
      });
      res.end(body);
    });
  });
});
listenAndSayPort(server);
