/**
 * Rate limits shared through Redis by three server processes (docs/contract.md "Rate limits"):
 * a key with limit N gets exactly N successes in total, whichever instance and
 * protocol (REST or Connect) each call goes to; then 429 with the exact
 * RateLimit-Policy, RateLimit and Retry-After fields and the REST envelope.
 * Another key is untouched, the limit comes back after the window, and when
 * Redis dies each instance limits on its own (insurance limiter) without a
 * single error, and shares again once Redis is back on the same port.
 *
 * Real processes: three `node dist/src/main.js`, a throwaway `redis-server`,
 * the shared MariaDB.
 */
import { Code, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RpcReply, rpcTop } from "../support/calls.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, createKey, wager } from "../support/fixtures.js";
import { type RedisProcess, type ServerProcess, sleep, startRedis, startServerProcess } from "../support/processes.js";
import { type RestReply, restTop } from "../support/rest.js";

const POINTS = 5;
const WINDOW_S = 3;
const DEFAULT_POLICY = `"default";q=${POINTS};w=${WINDOW_S}`;

let database: TestDatabase;
let redis: RedisProcess;
const servers: ServerProcess[] = [];
const transports: Transport[] = [];

/** One call, normalised: REST or Connect, to one of the instances. */
interface Outcome {
  readonly via: string;
  readonly ok: boolean;
  readonly limited: boolean;
  /** Any 5xx or unexpected code. */
  readonly status: number | string;
  readonly policy: string | undefined;
  readonly ratelimit: string | undefined;
  readonly retryAfter: string | undefined;
  readonly message: string;
  readonly rest?: RestReply;
  readonly rpc?: RpcReply;
  /** ms since the epoch when the answer arrived. */
  readonly at: number;
}

async function callVia(index: number, protocol: "rest" | "connect", key: string): Promise<Outcome> {
  const server = servers[index % servers.length] as ServerProcess;
  const via = `${protocol}@${index % servers.length}`;
  if (protocol === "rest") {
    const rest = await restTop(server.baseUrl, key);
    const errors = (rest.json as { errors?: { message?: string }[] | null }).errors;
    return {
      via,
      ok: rest.status === 200,
      limited: rest.status === 429,
      status: rest.status,
      policy: rest.headers["ratelimit-policy"],
      ratelimit: rest.headers.ratelimit,
      retryAfter: rest.headers["retry-after"],
      message: errors?.[0]?.message ?? "",
      rest,
      at: Date.now(),
    };
  }
  const rpc = await rpcTop(transports[index % servers.length] as Transport, key);
  return {
    via,
    ok: rpc.code === 0,
    limited: rpc.code === Code.ResourceExhausted,
    status: rpc.code === 0 ? "ok" : Code[rpc.code],
    policy: rpc.headers["ratelimit-policy"],
    ratelimit: rpc.headers.ratelimit,
    retryAfter: rpc.headers["retry-after"],
    message: rpc.message,
    rpc,
    at: Date.now(),
  };
}

/** Round-robin over the instances, alternating REST and Connect. */
function roundRobin(i: number): [number, "rest" | "connect"] {
  return [i % 3, ((i % 3) + Math.floor(i / 3)) % 2 === 0 ? "rest" : "connect"];
}

/**
 * The `t` of a RateLimit field must be the whole seconds left in a window that
 * began between `windowFrom` and the answer: ceil of (window − elapsed) up to the window.
 */
function expectReset(t: number, windowSeconds: number, windowFrom: number, answeredAt: number) {
  const elapsedMs = answeredAt - windowFrom;
  expect(t).toBeLessThanOrEqual(windowSeconds);
  expect(t).toBeGreaterThanOrEqual(Math.max(1, Math.ceil((windowSeconds * 1000 - elapsedMs) / 1000)));
}

function parseRateLimit(field: string | undefined, name: string): { r: number; t: number } {
  const match = new RegExp(`^"${name}";r=(\\d+);t=(\\d+)$`).exec(field ?? "");
  expect(match, `RateLimit field ${field}`).not.toBeNull();
  return { r: Number(match?.[1]), t: Number(match?.[2]) };
}

/** Checks a success: policy exact, remaining exact, reset within the window. */
function expectAdmitted(o: Outcome, policy: string, name: string, remaining: number, windowS: number, from: number) {
  expect({ via: o.via, status: o.status }).toEqual({ via: o.via, status: o.rest === undefined ? "ok" : 200 });
  expect(o.policy).toBe(policy);
  const { r, t } = parseRateLimit(o.ratelimit, name);
  expect({ via: o.via, r }).toEqual({ via: o.via, r: remaining });
  expectReset(t, windowS, from, o.at);
  expect(o.retryAfter).toBeUndefined();
}

/** Checks a refusal: 429 / resource_exhausted, exact fields, Retry-After equal to the reset, exact message and envelope. */
function expectRefused(o: Outcome, policy: string, name: string, points: number, windowS: number, from: number) {
  expect({ via: o.via, status: o.status }).toEqual({
    via: o.via,
    status: o.rest === undefined ? "ResourceExhausted" : 429,
  });
  expect(o.policy).toBe(policy);
  const { r, t } = parseRateLimit(o.ratelimit, name);
  expect(r).toBe(0);
  expectReset(t, windowS, from, o.at);
  expect(o.retryAfter).toBe(String(t));
  const message = `rate limit exceeded for this API key (${points} requests per ${windowS} s). Retry in ${t} s`;
  expect(o.message).toBe(message);
  if (o.rest !== undefined) {
    expect(o.rest.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(o.rest.json).toEqual({ data: null, errors: [{ code: "resource_exhausted", message }] });
    expect(o.rest.text).toBe(JSON.stringify({ data: null, errors: [{ code: "resource_exhausted", message }] }));
  }
}

/** No instance logged an error, wrote non-JSON output, or exited. */
function expectHealthyInstances() {
  for (const server of servers) {
    expect(server.child.exitCode).toBeNull();
    expect(server.otherOutput).toEqual([]);
    const errors = server.logs.filter((line) => typeof line.level === "number" && line.level >= 50);
    expect(errors).toEqual([]);
  }
}

beforeAll(async () => {
  database = await createTestDatabase("rate_limits_shared");
  await addUsers(database.db, [{ id: "u-1", affiliateId: "aff-rl", username: "one", avatar: "" }]);
  await addWagers(database.db, [wager("u-1", "12.5", JAN_1_2025 + 5)]);
  redis = await startRedis();
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    RATE_LIMIT_POINTS: String(POINTS),
    RATE_LIMIT_WINDOW_S: String(WINDOW_S),
  };
  servers.push(...(await Promise.all([0, 1, 2].map(() => startServerProcess(env)))));
  for (const server of servers) {
    await server.waitForLog((line) => line.msg === "rate limits are shared through Redis");
    expect(server.logs.find((line) => line.msg.startsWith("topwagers listening"))?.rateLimits).toBe("redis");
    transports.push(createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));
  }
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(servers.map((server) => server.stop("SIGTERM")));
  await redis?.stop();
  await database?.drop();
});

describe("one count shared by three instances through Redis", () => {
  it("gives a key with limit N exactly N successes across instances and protocols, then 429 with exact fields", async () => {
    const key = (await createKey(database.db, "aff-rl")).secret;
    const from = Date.now();
    const outcomes: Outcome[] = [];
    for (let i = 0; i < POINTS + 4; i++) outcomes.push(await callVia(...roundRobin(i), key));

    expect(outcomes.map((o) => o.via)).toEqual([
      "rest@0",
      "connect@1",
      "rest@2",
      "connect@0",
      "rest@1",
      "connect@2",
      "rest@0",
      "connect@1",
      "rest@2",
    ]);
    outcomes.slice(0, POINTS).forEach((o, i) => {
      expectAdmitted(o, DEFAULT_POLICY, "default", POINTS - 1 - i, WINDOW_S, from);
    });
    for (const o of outcomes.slice(POINTS)) expectRefused(o, DEFAULT_POLICY, "default", POINTS, WINDOW_S, from);
    expect(outcomes.filter((o) => o.ok)).toHaveLength(POINTS);
    // The successful answers are real answers.
    expect(outcomes[0]?.rest?.json).toEqual({
      data: [{ username: "one", avatar: "https://www.gravatar.com/avatar/?d=mp&s=256", totalWagered: 12.5 }],
      errors: null,
    });
    expect(outcomes[1]?.rpc?.entries).toBe(1);

    // Another key with the same policy is untouched, on every instance.
    const other = (await createKey(database.db, "aff-rl")).secret;
    const otherFrom = Date.now();
    for (let i = 0; i < 3; i++) {
      expectAdmitted(await callVia(i, "rest", other), DEFAULT_POLICY, "default", POINTS - 1 - i, WINDOW_S, otherFrom);
    }

    // The limit comes back once Retry-After has passed, on any instance.
    const last = outcomes[outcomes.length - 1] as Outcome;
    await sleep(Number(last.retryAfter) * 1000 + 50);
    const restoredFrom = Date.now();
    expectAdmitted(await callVia(2, "connect", key), DEFAULT_POLICY, "default", POINTS - 1, WINDOW_S, restoredFrom);
    expectAdmitted(await callVia(0, "rest", key), DEFAULT_POLICY, "default", POINTS - 2, WINDOW_S, restoredFrom);
    expectHealthyInstances();
  });

  it("counts concurrent calls atomically: 3×N calls at once across instances give exactly N successes", async () => {
    const key = (await createKey(database.db, "aff-rl")).secret;
    const from = Date.now();
    const outcomes = await Promise.all(Array.from({ length: POINTS * 3 }, (_, i) => callVia(...roundRobin(i), key)));
    const admitted = outcomes.filter((o) => o.ok);
    expect(admitted).toHaveLength(POINTS);
    expect(outcomes.filter((o) => o.limited)).toHaveLength(POINTS * 2);
    // Each success saw a different remaining count: 4, 3, 2, 1, 0 in some order.
    expect(admitted.map((o) => parseRateLimit(o.ratelimit, "default").r).sort()).toEqual([0, 1, 2, 3, 4]);
    for (const o of outcomes.filter((x) => x.limited)) {
      expectRefused(o, DEFAULT_POLICY, "default", POINTS, WINDOW_S, from);
    }
  });

  it("applies a key's own limit across instances, reported as the key's policy", async () => {
    const own = { points: 7, windowSeconds: 60 };
    const policy = '"key";q=7;w=60';
    const key = (await createKey(database.db, "aff-rl", own)).secret;
    const from = Date.now();
    const outcomes: Outcome[] = [];
    for (let i = 0; i < own.points + 3; i++) outcomes.push(await callVia(...roundRobin(i), key));
    outcomes.slice(0, own.points).forEach((o, i) => {
      expectAdmitted(o, policy, "key", own.points - 1 - i, own.windowSeconds, from);
    });
    for (const o of outcomes.slice(own.points)) expectRefused(o, policy, "key", own.points, own.windowSeconds, from);
    // The default-policy key of the other tests is counted elsewhere: a fresh default key starts full.
    const plain = (await createKey(database.db, "aff-rl")).secret;
    expectAdmitted(await callVia(1, "connect", plain), DEFAULT_POLICY, "default", POINTS - 1, WINDOW_S, Date.now());
  });
});

describe("Redis outage: the insurance limiter", () => {
  it("limits each instance on its own while Redis is down, without errors, and shares again when it returns", async () => {
    const marks = servers.map((server) => server.logs.length);
    const killedAt = Date.now();
    await redis.kill();
    // Each instance notices and says so.
    await Promise.all(
      servers.map((server, i) =>
        server.waitForLog((line) => line.msg.startsWith("Redis unreachable"), 10_000, marks[i]),
      ),
    );
    const noticedAfterMs = Date.now() - killedAt;

    // Per instance: exactly N successes, then 429, with the same fields; never an error.
    const key = (await createKey(database.db, "aff-rl")).secret;
    const from = Date.now();
    for (let instance = 0; instance < 3; instance++) {
      const outcomes: Outcome[] = [];
      for (let i = 0; i < POINTS + 2; i++) {
        outcomes.push(await callVia(instance, i % 2 === 0 ? "rest" : "connect", key));
      }
      expect(outcomes.map((o) => o.status)).toEqual([200, "ok", 200, "ok", 200, "ResourceExhausted", 429]);
      outcomes.slice(0, POINTS).forEach((o, i) => {
        expectAdmitted(o, DEFAULT_POLICY, "default", POINTS - 1 - i, WINDOW_S, from);
      });
      for (const o of outcomes.slice(POINTS)) expectRefused(o, DEFAULT_POLICY, "default", POINTS, WINDOW_S, from);
    }
    // A burst while Redis is still down: only 200 or 429, nothing else.
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) => callVia(i % 3, i % 2 === 0 ? "rest" : "connect", key)),
    );
    expect(burst.filter((o) => !o.ok && !o.limited)).toEqual([]);
    expectHealthyInstances();

    // Redis back on the same port (empty): every instance reconnects and says so.
    const marksBack = servers.map((server) => server.logs.length);
    await redis.restart();
    const restartedAt = Date.now();
    await Promise.all(
      servers.map((server, i) =>
        server.waitForLog((line) => line.msg === "rate limits are shared through Redis", 10_000, marksBack[i]),
      ),
    );
    console.log(
      `Redis killed: all 3 instances on the insurance limiter within ${noticedAfterMs} ms; Redis back: all 3 sharing again ${Date.now() - restartedAt} ms after it answered PING`,
    );
    const shared = (await createKey(database.db, "aff-rl")).secret;
    const sharedFrom = Date.now();
    const outcomes: Outcome[] = [];
    for (let i = 0; i < POINTS * 3; i++) outcomes.push(await callVia(...roundRobin(i), shared));
    outcomes.slice(0, POINTS).forEach((o, i) => {
      expectAdmitted(o, DEFAULT_POLICY, "default", POINTS - 1 - i, WINDOW_S, sharedFrom);
    });
    for (const o of outcomes.slice(POINTS)) expectRefused(o, DEFAULT_POLICY, "default", POINTS, WINDOW_S, sharedFrom);
    expectHealthyInstances();
  }, 60_000);
});
