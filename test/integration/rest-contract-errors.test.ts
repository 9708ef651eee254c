/**
 * The REST contract (docs/contract.md, "The one public operation") on a real socket over a real database: path and method (404,
 * 405), body size (413), media type (415) and an unreachable database (503).
 * One of the test/integration/rest-contract-*.test.ts files; the calls, constants and data are in
 * test/support/rest-contract.ts.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPublicApp } from "../../src/apps/public.js";
import { loadConfig } from "../../src/platform/config.js";
import { type Database, openDatabase } from "../../src/platform/database/database.js";
import { createOnePortServer, type OnePortServer } from "../../src/platform/transport/one-port-server.js";
import { createTestDatabase, TEST_SERVER_URL, type TestDatabase } from "../support/database.js";
import { listenOnFreePort } from "../support/listen.js";
import { RELEASE } from "../support/release.js";
import { errorBody } from "../support/rest.js";
import * as contract from "../support/rest-contract.js";

contract.useRestContractServer();

describe("404 and 405: path and method, checked first", () => {
  it.each([
    ["/"],
    ["/top-affiliate-wagers"],
    ["/top-affiliate-wagers-by-period/extra"],
    ["/api/top-affiliate-wagers-by-period"],
    ["/TOP-AFFILIATE-WAGERS-BY-PERIOD"],
  ])("answers POST %s with 404 pointing to the operation's path", async (path) => {
    for (const key of [contract.keys.rank, null]) {
      const reply = await contract.call(path, { key, body: { ...contract.OCTOBER, numUsers: 3 } });
      expect(reply.status).toBe(404);
      expect(reply.json).toEqual(errorBody({ code: "not_found", message: contract.NOT_FOUND_MESSAGE }));
      expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(reply.headers["www-authenticate"]).toBeUndefined();
      expect(reply.headers.allow).toBeUndefined();
    }
  });

  it("answers GET on an unknown path with 404", async () => {
    const reply = await contract.call("/nothing-here", { method: "GET" });
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual(errorBody({ code: "not_found", message: contract.NOT_FOUND_MESSAGE }));
  });

  it.each([["GET"], ["PUT"], ["DELETE"], ["PATCH"]])(
    "answers %s on the operation's path with 405 and Allow: POST, before the key is checked",
    async (method) => {
      for (const key of [contract.keys.rank, null]) {
        const reply = await contract.call(contract.OP, {
          method,
          key,
          ...(method === "GET" ? {} : { body: { ...contract.OCTOBER, numUsers: 3 } }),
        });
        expect(reply.status).toBe(405);
        expect(reply.json).toEqual(errorBody({ code: "method_not_allowed", message: `use POST for ${contract.OP}` }));
        expect(reply.headers.allow).toBe("POST");
        expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(reply.headers["www-authenticate"]).toBeUndefined();
      }
    },
  );

  it("answers HEAD on the operation's path with 405 and Allow: POST", async () => {
    const reply = await contract.call(contract.OP, { method: "HEAD" });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
    expect(reply.text).toBe("");
  });

  it("tolerates a trailing slash and repeated slashes on 405 too", async () => {
    const reply = await contract.nodeRequest({ method: "GET", path: `//${contract.OP.slice(1)}//` });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe("POST");
  });
});

describe("413: body over 64 KiB", () => {
  /** A valid request padded with spaces to exactly `size` bytes. */
  function paddedBody(size: number): string {
    const json = JSON.stringify({ ...contract.OCTOBER, numUsers: 3 });
    return `${json.slice(0, -1)}${" ".repeat(size - json.length)}}`;
  }
  const TOO_LARGE = errorBody({ code: "payload_too_large", message: contract.TOO_LARGE_MESSAGE });
  const jsonHeaders = () => ({ authorization: `Bearer ${contract.keys.rank}`, "content-type": "application/json" });
  /** Sends the body (as one piece or in chunks) and reads the answer's status and JSON. */
  const send = async (body: { body: string } | { chunks: Buffer[] }) => {
    const reply = await contract.nodeRequest({ path: contract.OP, headers: jsonHeaders(), ...body });
    return { ...reply, json: JSON.parse(reply.body.toString("utf8")) as unknown };
  };
  const TOP_3 = { data: contract.OCTOBER_RANKING.slice(0, 3), errors: null };

  it("accepts a body of exactly 64 KiB and refuses one byte more (Content-Length)", async () => {
    expect(paddedBody(contract.MAX_BODY)).toHaveLength(contract.MAX_BODY);
    const ok = await send({ body: paddedBody(contract.MAX_BODY) });
    expect([ok.status, ok.json]).toEqual([200, TOP_3]);

    const refused = await send({ body: paddedBody(contract.MAX_BODY + 1) });
    expect([refused.status, refused.json]).toEqual([413, TOO_LARGE]);
    expect(refused.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(refused.headers["ratelimit-policy"]).toBe('"default";q=100000;w=60');
  });

  it("refuses a chunked body that grows over 64 KiB, and accepts one of exactly 64 KiB", async () => {
    const chunked = (size: number) => {
      const bytes = Buffer.from(paddedBody(size), "utf8");
      const chunks: Buffer[] = [];
      for (let i = 0; i < bytes.length; i += 10_000) chunks.push(bytes.subarray(i, i + 10_000));
      return chunks;
    };
    const ok = await send({ chunks: chunked(contract.MAX_BODY) });
    expect([ok.status, ok.json]).toEqual([200, TOP_3]);

    const refused = await send({ chunks: chunked(contract.MAX_BODY + 1) });
    expect([refused.status, refused.json]).toEqual([413, TOO_LARGE]);
    expect(refused.headers.connection).toBe("close");
  });

  it("refuses a chunked upload as soon as it passes 64 KiB, without waiting for its end", async () => {
    const piece = Buffer.from(`{"numUsers": 3${" ".repeat(16_384)}`, "utf8");
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const refused = await contract.nodeRequest({
        path: contract.OP,
        headers: jsonHeaders(),
        chunks: [piece, piece, piece, piece, piece],
        unfinished: true,
      });
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body.toString("utf8"))).toEqual(TOO_LARGE);
    }
  });

  it("refuses on a declared Content-Length over 64 KiB without waiting for the body", async () => {
    const reply = await contract.rawExchange(
      `POST ${contract.OP} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${contract.keys.rank}\r\n` +
        "Content-Type: application/json\r\nContent-Length: 1000000000\r\nConnection: close\r\n\r\n{}",
    );
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body)).toEqual(TOO_LARGE);
  });
});

describe("415: Content-Type not JSON", () => {
  const body = JSON.stringify({ ...contract.OCTOBER, numUsers: 3 });

  it.each([
    ["text/plain", "Content-Type text/plain is not supported. Send application/json"],
    [
      "application/x-www-form-urlencoded",
      "Content-Type application/x-www-form-urlencoded is not supported. Send application/json",
    ],
    ["text/json", "Content-Type text/json is not supported. Send application/json"],
  ])("refuses %s", async (contentType, message) => {
    const reply = await contract.call(contract.OP, {
      key: contract.keys.rank,
      body,
      headers: { "content-type": contentType },
    });
    expect(reply.status).toBe(415);
    expect(reply.json).toEqual(errorBody({ code: "unsupported_media_type", message }));
    expect(reply.headers["content-type"]).toBe("application/json; charset=utf-8");
  });

  it("refuses a body without Content-Type", async () => {
    const reply = await contract.nodeRequest({
      path: contract.OP,
      headers: { authorization: `Bearer ${contract.keys.rank}` },
      body,
    });
    expect(reply.status).toBe(415);
    expect(JSON.parse(reply.body.toString("utf8"))).toEqual(
      errorBody({ code: "unsupported_media_type", message: "Content-Type is required. Send application/json" }),
    );
  });

  it.each([["application/json; charset=utf-8"], ["application/json;charset=UTF-8;v=1"], ["Application/JSON"]])(
    "accepts %s",
    async (contentType) => {
      const reply = await contract.call(contract.OP, {
        key: contract.keys.rank,
        body,
        headers: { "content-type": contentType },
      });
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual({ data: contract.OCTOBER_RANKING.slice(0, 3), errors: null });
    },
  );
});

describe("503: database unreachable", () => {
  /** A TCP relay to the database that can be cut and reconnected, so the server sees it vanish. */
  class DatabaseRelay {
    private listener: net.Server | undefined;
    private readonly sockets = new Set<net.Socket>();
    port = 0;

    constructor(private readonly target: { host: string; port: number }) {}

    async open(): Promise<void> {
      const listener = net.createServer((client) => {
        const upstream = net.connect(this.target.port, this.target.host);
        this.sockets.add(client);
        this.sockets.add(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          this.sockets.delete(client);
          this.sockets.delete(upstream);
        };
        for (const socket of [client, upstream]) {
          socket.on("error", drop);
          socket.on("close", drop);
        }
      });
      await new Promise<void>((resolve) => listener.listen(this.port, "127.0.0.1", resolve));
      this.port = (listener.address() as net.AddressInfo).port;
      this.listener = listener;
    }

    /** Refuses new connections and breaks the open ones. */
    async cut(): Promise<void> {
      const listener = this.listener;
      this.listener = undefined;
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
      if (listener !== undefined) await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  }

  const target = new URL(TEST_SERVER_URL);
  const relay = new DatabaseRelay({ host: target.hostname, port: target.port === "" ? 3306 : Number(target.port) });
  let direct: TestDatabase;
  let relayed: Database;
  let publicServer: OnePortServer;
  let baseUrl: string;
  let key: string;
  const body = { ...contract.OCTOBER, numUsers: 10 };
  const UNAVAILABLE = errorBody({
    code: "unavailable",
    message: "the leaderboard database is unavailable right now. Retry shortly",
  });
  const served = { data: [{ username: "steady", avatar: contract.img("steady"), totalWagered: 7 }], errors: null };

  beforeAll(async () => {
    direct = await createTestDatabase("rest_contract_503");
    key = await contract.oneWagerBoard(direct.db, "aff-steady", "st", "steady", "7");
    await relay.open();
    const url = new URL(direct.url);
    url.hostname = "127.0.0.1";
    url.port = String(relay.port);
    relayed = await openDatabase({ url: url.toString(), poolSize: 2, queryTimeoutMs: 5_000 });
    const config = loadConfig({ RATE_LIMIT_POINTS: "100000", CACHE_TTL_MS: "0", DATABASE_URL: url.toString() });
    const app = createPublicApp(config, relayed);
    await app.caughtUp();
    publicServer = createOnePortServer(app.handler);
    baseUrl = `http://127.0.0.1:${await listenOnFreePort(publicServer.server)}`;
  });

  afterAll(async () => {
    await publicServer?.close(5_000);
    await relay.cut();
    await relayed?.close().catch(() => undefined);
    await direct?.drop();
  });

  it("answers 503 unavailable with Retry-After, never 500, and 200 again once the database is back", async () => {
    const before = await contract.call(contract.OP, { key, body, baseUrl });
    expect(before.status).toBe(200);
    expect(before.json).toEqual(served);
    expect((await contract.call("/readyz", { method: "GET", baseUrl })).status).toBe(200);

    await relay.cut();
    // The key is held in memory: the leaderboard query is what fails.
    const known = await contract.call(contract.OP, { key, body, baseUrl });
    expect(known.status).toBe(503);
    expect(known.json).toEqual(UNAVAILABLE);
    expect(known.headers["retry-after"]).toBe("1");
    expect(known.headers["content-type"]).toBe("application/json; charset=utf-8");
    // Every usable key is in memory, so an unknown one is still told apart: 401, as without the outage.
    const unseen = await contract.call(contract.OP, { key: `tw_${"Q".repeat(32)}`, body, baseUrl });
    expect(unseen.status).toBe(401);
    const ready = await contract.call("/readyz", { method: "GET", baseUrl });
    expect(ready.status).toBe(503);
    expect(ready.json).toEqual({ status: "database_unavailable", ...RELEASE });
    expect((await contract.call("/healthz", { method: "GET", baseUrl })).json).toEqual({ status: "ok" });

    await relay.open();
    const after = await contract.call(contract.OP, { key, body, baseUrl });
    expect(after.status).toBe(200);
    expect(after.json).toEqual(served);
  });
});
