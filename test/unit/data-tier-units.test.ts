/**
 * Pure logic of the data tier: node and replica URL lists, the settings that go with them, how a
 * failed statement is classified, and which node is chosen from probe results. No database.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pool } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { loadConfig, redact } from "../../src/platform/config.js";
import { connectionOptions, openDatabase, splitUrls } from "../../src/platform/database/database.js";
import { classifyDatabaseError } from "../../src/platform/database/database-errors.js";
import { chooseNode, NodeSet, routedPool } from "../../src/platform/database/node-set.js";
import { problemsOf } from "../support/config-problems.js";

describe("DATABASE_URL with several nodes and DATABASE_READ_URL", () => {
  it("keeps the nodes in order of preference and lists the replicas", () => {
    const config = loadConfig({
      DATABASE_URL: "mysql://app:pw@10.0.0.1:3306/topwagers, mysql://app:pw@10.0.0.2:3307/topwagers",
      DATABASE_READ_URL: "mysql://ro@10.0.1.1/topwagers,mariadb://ro@10.0.1.2:3310/topwagers",
    });
    expect(splitUrls(config.databaseUrl)).toEqual([
      "mysql://app:pw@10.0.0.1:3306/topwagers",
      "mysql://app:pw@10.0.0.2:3307/topwagers",
    ]);
    expect(config.databaseReadUrls).toEqual(["mysql://ro@10.0.1.1/topwagers", "mariadb://ro@10.0.1.2:3310/topwagers"]);
    expect(config.replicaWaitMs).toBe(500);
    expect(config.migrateOnStart).toBe(true);
    expect(config.databaseTlsCa).toBeUndefined();
  });

  it("defaults: one node, no replicas", () => {
    const config = loadConfig({});
    expect(splitUrls(config.databaseUrl)).toEqual(["mysql://root@127.0.0.1:3306/topwagers"]);
    expect(config.databaseReadUrls).toEqual([]);
  });

  it("names every bad URL of a list, and different databases", () => {
    expect(
      problemsOf({
        DATABASE_URL: "mysql://a@h1/topwagers,,http://h2/topwagers",
        DATABASE_READ_URL: "mysql://r@h3/other",
        DATABASE_REPLICA_WAIT_MS: "soon",
        MIGRATE_ON_START: "no",
      }),
    ).toEqual([
      "DATABASE_URL (URL 2) is empty; separate URLs with single commas",
      'DATABASE_URL (URL 3) must be a mysql: or mariadb: URL, got "http://h2/topwagers"',
      "DATABASE_URL and DATABASE_READ_URL must all name the same database, got topwagers, other",
      'MIGRATE_ON_START must be true or false, got "no"',
      'DATABASE_REPLICA_WAIT_MS must be a whole number from 0 to 60000, got "soon"',
    ]);
  });

  it("rejects a database name that is not letters, digits and _", () => {
    expect(problemsOf({ DATABASE_URL: "mysql://a@h1/top-wagers" })).toEqual([
      'DATABASE_URL must name a database of letters, digits and "_", got "mysql://a@h1/top-wagers"',
    ]);
  });

  it("hides every password of a list", () => {
    expect(redact("mysql://a:s1@h1/db,mysql://b:s2@h2/db")).toBe("mysql://a:***@h1/db,mysql://b:***@h2/db");
  });

  it("connection options come from the first URL of a list", () => {
    const options = connectionOptions("mysql://a:p%2Cw@h1:3307/db1,mysql://b@h2/db1");
    expect([options.host, options.port, options.user, options.password, options.database]).toEqual([
      "h1",
      3307,
      "a",
      "p,w",
      "db1",
    ]);
    expect(options.ssl).toBeUndefined();
  });
});

describe("DATABASE_CONNECT_TIMEOUT_MS and DATABASE_PROBE_TIMEOUT_MS", () => {
  it("default to 3 s and 1 s; the connect timeout reaches the connection options", () => {
    const defaults = loadConfig({});
    expect([defaults.databaseConnectTimeoutMs, defaults.databaseProbeTimeoutMs]).toEqual([3_000, 1_000]);
    expect(connectionOptions(defaults.databaseUrl).connectTimeout).toBe(3_000);
    const slow = loadConfig({ DATABASE_CONNECT_TIMEOUT_MS: "60000", DATABASE_PROBE_TIMEOUT_MS: "20000" });
    expect([slow.databaseConnectTimeoutMs, slow.databaseProbeTimeoutMs]).toEqual([60_000, 20_000]);
    expect(connectionOptions(slow.databaseUrl, undefined, slow.databaseConnectTimeoutMs).connectTimeout).toBe(60_000);
  });

  it("names a value that is not a whole number of milliseconds from 100 to 600000", () => {
    expect(problemsOf({ DATABASE_CONNECT_TIMEOUT_MS: "50", DATABASE_PROBE_TIMEOUT_MS: "1s" })).toEqual([
      'DATABASE_CONNECT_TIMEOUT_MS must be a whole number from 100 to 600000, got "50"',
      'DATABASE_PROBE_TIMEOUT_MS must be a whole number from 100 to 600000, got "1s"',
    ]);
  });

  it("a node that accepts connections and never answers is given up on after the set times, not the defaults", async () => {
    // Two such nodes: opening asks each for its version (connect timeout), then probes both (probe timeout).
    // With the defaults (3 s and 1 s) that takes over 7 s; with 200 ms each, well under 3 s.
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as net.AddressInfo;
    const url = `mysql://root@127.0.0.1:${port}/tw_silent,mysql://root@127.0.0.1:${port}/tw_silent`;
    const startedAt = performance.now();
    const db = await openDatabase({ url, poolSize: 1, connectTimeoutMs: 200, probeTimeoutMs: 200 });
    try {
      await expect(db.read.query("SELECT 1")).rejects.toMatchObject({ code: "ETIMEDOUT" });
      expect(performance.now() - startedAt).toBeLessThan(3_000);
    } finally {
      await db.close();
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe("CHANGE_FEED_POLL_MS and CHANGE_FEED_MAX_LAG_MS", () => {
  it("default to a read every 200 ms and cached answers served while the last good read is under 900 ms old", () => {
    const defaults = loadConfig({});
    expect([defaults.changeFeedPollMs, defaults.changeFeedMaxLagMs]).toEqual([200, 900]);
    const relaxed = loadConfig({ CHANGE_FEED_POLL_MS: "1000", CHANGE_FEED_MAX_LAG_MS: "60000" });
    expect([relaxed.changeFeedPollMs, relaxed.changeFeedMaxLagMs]).toEqual([1_000, 60_000]);
  });

  it("refuses a lag limit that is not above the poll interval, and values out of range", () => {
    expect(problemsOf({ CHANGE_FEED_POLL_MS: "1000", CHANGE_FEED_MAX_LAG_MS: "1000" })).toEqual([
      "CHANGE_FEED_MAX_LAG_MS (1000) must be greater than CHANGE_FEED_POLL_MS (1000), or cached answers are never served",
    ]);
    expect(problemsOf({ CHANGE_FEED_POLL_MS: "5", CHANGE_FEED_MAX_LAG_MS: "soon" })).toEqual([
      'CHANGE_FEED_POLL_MS must be a whole number from 10 to 60000, got "5"',
      'CHANGE_FEED_MAX_LAG_MS must be a whole number from 100 to 600000, got "soon"',
    ]);
  });
});

describe("DATABASE_TLS_CA and MIGRATE_ON_START", () => {
  const dir = mkdtempSync(join(tmpdir(), "topwagers-units-"));

  it("reads the CA file and turns on verified TLS", () => {
    const path = join(dir, "ca.pem");
    const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    writeFileSync(path, pem);
    const config = loadConfig({ DATABASE_TLS_CA: path, MIGRATE_ON_START: "false" });
    expect(config.databaseTlsCa).toBe(pem);
    expect(config.migrateOnStart).toBe(false);
    expect(connectionOptions(config.databaseUrl, config.databaseTlsCa).ssl).toEqual({
      ca: pem,
      rejectUnauthorized: true,
    });
  });

  it("names a missing or non-PEM CA file", () => {
    const missing = join(dir, "missing.pem");
    expect(problemsOf({ DATABASE_TLS_CA: missing })).toEqual([
      `DATABASE_TLS_CA cannot be read: ENOENT: no such file or directory, open '${missing}'`,
    ]);
    const text = join(dir, "text.pem");
    writeFileSync(text, "hello\n");
    expect(problemsOf({ DATABASE_TLS_CA: text })).toEqual([
      `DATABASE_TLS_CA must be a PEM file of CA certificates, "${text}" holds none`,
    ]);
  });
});

describe("classifyDatabaseError", () => {
  const cases: [string, object, string][] = [
    ["connection refused", { code: "ECONNREFUSED", errno: -111, fatal: true }, "node_down"],
    ["query in flight on a killed node", { code: "PROTOCOL_CONNECTION_LOST", fatal: true }, "node_down"],
    ["closed pooled connection", { message: "Can't add new command when connection is in closed state" }, "node_down"],
    ["non-Primary Galera node", { errno: 1047, code: "ER_UNKNOWN_COM_ERROR", sqlState: "08S01" }, "node_down"],
    ["server shutting down", { errno: 1053, code: "ER_SERVER_SHUTDOWN" }, "node_down"],
    ["read-only node", { errno: 1290, code: "ER_OPTION_PREVENTS_STATEMENT" }, "node_down"],
    ["any fatal error", { code: "SOMETHING_NEW", fatal: true }, "node_down"],
    ["deadlock or certification conflict", { errno: 1213, code: "ER_LOCK_DEADLOCK", sqlState: "40001" }, "retry"],
    ["lock wait timeout", { errno: 1205, code: "ER_LOCK_WAIT_TIMEOUT" }, "retry"],
    ["statement timeout", { errno: 1969, code: undefined, sqlState: "70100" }, "other"],
    ["duplicate key", { errno: 1062, code: "ER_DUP_ENTRY" }, "other"],
    ["missing table", { errno: 1146, code: "ER_NO_SUCH_TABLE" }, "other"],
  ];
  for (const [name, error, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      expect(classifyDatabaseError(Object.assign(new Error(name), error))).toBe(expected);
    });
  }
  it("non-errors are other", () => {
    expect([classifyDatabaseError(null), classifyDatabaseError("boom"), classifyDatabaseError(42)]).toEqual([
      "other",
      "other",
      "other",
    ]);
  });
});

describe("chooseNode", () => {
  const up = { up: true, writable: true };
  const down = { up: false, writable: false };
  const readOnly = { up: true, writable: false };
  it("prefers the first healthy writable node, in order", () => {
    expect(chooseNode([up, up, up], 2)).toBe(0);
    expect(chooseNode([down, up, up], 0)).toBe(1);
    expect(chooseNode([readOnly, down, up], 0)).toBe(2);
  });
  it("falls back to a healthy read-only node, then keeps the current one", () => {
    expect(chooseNode([down, readOnly, down], 0)).toBe(1);
    expect(chooseNode([down, down, down], 1)).toBe(1);
  });
});

describe("routedPool (fake pools, no database)", () => {
  type Call = (sql: string) => Promise<unknown>;
  const fakePool = (name: string, behaviour: Call) =>
    ({ name, query: behaviour, execute: behaviour, end: async () => undefined }) as unknown as Pool;
  const failure = (fields: object) => Object.assign(new Error("failed"), fields);

  it("re-sends an autocommit statement that lost a certification conflict (1213), then answers", async () => {
    let calls = 0;
    const pool = fakePool("n1", async (sql) => {
      calls++;
      if (calls < 3) throw failure({ errno: 1213, code: "ER_LOCK_DEADLOCK" });
      return [[{ sql }], []];
    });
    const nodes = new NodeSet({ nodes: [{}] });
    const routed = routedPool([pool], nodes);
    expect(await routed.query("UPDATE t SET x = 1")).toEqual([[{ sql: "UPDATE t SET x = 1" }], []]);
    expect(calls).toBe(3);
  });

  it("a lost connection fails that statement, and the next one goes to the next node", async () => {
    const used: string[] = [];
    const first = fakePool("n1", async () => {
      used.push("n1");
      throw failure({ code: "PROTOCOL_CONNECTION_LOST", fatal: true });
    });
    const second = fakePool("n2", async () => {
      used.push("n2");
      return [[], []];
    });
    const switches: [number, number][] = [];
    const nodes = new NodeSet({
      nodes: [
        { host: "127.0.0.1", port: 1 },
        { host: "127.0.0.1", port: 1 },
      ],
      onSwitch: (from, to) => switches.push([from, to]),
    });
    const routed = routedPool([first, second], nodes);
    await expect(routed.query("SELECT 1")).rejects.toThrow("failed");
    await routed.query("SELECT 1");
    expect(used).toEqual(["n1", "n2"]);
    expect(switches[0]).toEqual([0, 1]);
    await nodes.close();
  });

  it("other errors neither retry nor switch", async () => {
    let calls = 0;
    const pool = fakePool("n1", async () => {
      calls++;
      throw failure({ errno: 1062, code: "ER_DUP_ENTRY" });
    });
    const nodes = new NodeSet({ nodes: [{}, {}] });
    await expect(routedPool([pool, pool], nodes).execute("INSERT")).rejects.toThrow("failed");
    expect([calls, nodes.current]).toEqual([1, 0]);
  });
});
