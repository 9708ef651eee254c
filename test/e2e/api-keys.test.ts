/**
 * API keys as an operator manages them: the keys CLI run as a separate
 * process (`node dist/src/cli/main.js keys ...`, what `npm run cli` runs)
 * against the test database, and a running server that honours what it did:
 * new keys work and revoked keys are refused within 1 second (the change feed
 * carries each change to the server's in-memory key set), per-key limits
 * apply, and each key sees only its own affiliate.
 *
 * Needs a build (`npm test` builds first); when dist/ is older than src/, the
 * test builds it once itself.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { cliOutcome } from "../support/cli.js";
import { FEB_1_2025, JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, keysFollowed, wager } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);

const PERIOD = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 };
const CLI = "dist/src/cli/main.js";
const KEY_PATTERN = /^tw_sk_[0-9A-Za-z]{38}$/;
const UNAUTHENTICATED_BODY = {
  data: null,
  errors: [
    { code: "unauthenticated", message: "missing or invalid API key (send Authorization Bearer with your key)" },
  ],
};

let server: TestServer;

const cli = (...args: string[]) => cliOutcome(args, server.database.url);

interface CreatedKey {
  readonly id: string;
  readonly key: string;
  readonly affiliateId: string;
}

/**
 * `keys create ... --json`, asserting the output is exactly one JSON line with exactly id, key, affiliateId;
 * then waits until the server holds the key (one change-feed poll; "accepts within 1 second" measures it).
 */
async function createKeyWithCli(affiliate: string, ...extra: string[]): Promise<CreatedKey> {
  const created = await createKeyWithCliNoWait(affiliate, ...extra);
  await keysFollowed();
  return created;
}

/** What `keys create` says on stderr for an affiliate none of whose users is known yet. */
function noUsersWarning(affiliate: string): string {
  return (
    `warning: no users of affiliate ${affiliate} are known yet, so the key reads an empty leaderboard ` +
    "until the platform sends some (check the affiliate id for a typo).\n"
  );
}

async function createKeyWithCliNoWait(affiliate: string, ...extra: string[]): Promise<CreatedKey> {
  const result = await cli("keys", "create", "--affiliate", affiliate, ...extra, "--json");
  const knownAffiliates = ["aff-x", "aff-a", "aff-b"];
  expect({ code: result.code, stderr: result.stderr }).toEqual({
    code: 0,
    stderr: knownAffiliates.includes(affiliate) ? "" : noUsersWarning(affiliate),
  });
  const lines = result.stdout.split("\n");
  expect(lines).toHaveLength(2);
  expect(lines[1]).toBe("");
  const created = JSON.parse(lines[0] ?? "") as CreatedKey;
  expect(Object.keys(created)).toEqual(["id", "key", "affiliateId"]);
  expect(created.affiliateId).toBe(affiliate);
  expect(created.key).toMatch(KEY_PATTERN);
  expect(created.id).toMatch(/^\S{1,64}$/);
  expect(result.stdout).toBe(`${JSON.stringify(created)}\n`);
  return created;
}

/** `keys list --json`: one JSON document, an array, on one line. */
async function listKeys(): Promise<Record<string, unknown>[]> {
  const result = await cli("keys", "list", "--json");
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
  expect(result.stdout.endsWith("\n")).toBe(true);
  expect(result.stdout.trimEnd().includes("\n")).toBe(false);
  const parsed: unknown = JSON.parse(result.stdout);
  expect(Array.isArray(parsed)).toBe(true);
  return parsed as Record<string, unknown>[];
}

/** Every stored key row, to show a refused command changed nothing. */
async function storedKeys(): Promise<RowDataPacket[]> {
  const [rows] = await server.database.db.read.query<RowDataPacket[]>("SELECT * FROM api_keys ORDER BY id");
  return rows;
}

async function top(key: string) {
  const response = await fetch(`${server.baseUrl}/top-affiliate-wagers-by-period`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(PERIOD),
  });
  return {
    status: response.status,
    policy: response.headers.get("ratelimit-policy"),
    rateLimit: response.headers.get("ratelimit"),
    body: (await response.json()) as unknown,
  };
}

async function newestModification(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts")) {
      newest = Math.max(newest, (await stat(join(entry.parentPath, entry.name))).mtimeMs);
    }
  }
  return newest;
}

/** Builds dist/ when it is missing or older than the sources (running this file alone). */
async function ensureBuilt(): Promise<void> {
  const built = await stat(CLI).then(
    (s) => s.mtimeMs,
    () => 0,
  );
  const sources = Math.max(await newestModification("src"), await newestModification("gen"));
  if (built >= sources) return;
  // tsc still emits when some other file has a type error; that is the typecheck's business, not this test's.
  await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], {
    timeout: 120_000,
  }).catch(async (error: unknown) => {
    if ((await stat(CLI).catch(() => undefined)) === undefined) throw error;
  });
}

beforeAll(async () => {
  await ensureBuilt();
  server = await startTestServer("api_keys");
  const db = server.database.db;
  await addUsers(db, [
    { id: "u-x1", affiliateId: "aff-x", username: "xavier", avatar: "https://img.example/x.png" },
    { id: "u-a1", affiliateId: "aff-a", username: "anna", avatar: "" },
    { id: "u-a2", affiliateId: "aff-a", username: "arne", avatar: "https://img.example/arne.png" },
    { id: "u-b1", affiliateId: "aff-b", username: "bea", avatar: "https://img.example/bea.png" },
  ]);
  await addWagers(db, [
    wager("u-x1", "12.34", JAN_1_2025 + 5),
    wager("u-a1", "100.00000001", JAN_1_2025 + 10),
    wager("u-a2", "7", JAN_1_2025 + 20),
    wager("u-b1", "5000", JAN_1_2025 + 30),
    wager("u-b1", "0.5", FEB_1_2025 - 1),
  ]);
}, 180_000);

afterAll(async () => {
  await server?.close();
});

const X_BODY = {
  data: [{ username: "xavier", avatar: "https://img.example/x.png", totalWagered: 12.34 }],
  errors: null,
};

describe("keys create", () => {
  it("prints one JSON line with id, key and affiliateId; stores only the SHA-256 hash", async () => {
    const created = await createKeyWithCli("aff-x", "--label", "ci");
    const [rows] = await server.database.db.read.query<RowDataPacket[]>("SELECT * FROM api_keys WHERE id = ?", [
      created.id,
    ]);
    expect(rows).toHaveLength(1);
    const row = rows[0] as RowDataPacket;
    const hash = createHash("sha256").update(created.key, "utf8").digest();
    expect(Buffer.isBuffer(row.key_hash)).toBe(true);
    expect((row.key_hash as Buffer).length).toBe(32);
    expect((row.key_hash as Buffer).equals(hash)).toBe(true);
    expect(row.label).toBe("ci");
    expect(row.revoked_at).toBeNull();
    // The secret (or its random part) is in no column, in no encoding we could think of.
    const secretBody = created.key.slice(6);
    for (const [column, value] of Object.entries(row)) {
      const forms = Buffer.isBuffer(value)
        ? [value.toString("utf8"), value.toString("hex"), value.toString("base64"), value.toString("base64url")]
        : [String(value)];
      for (const form of forms) {
        expect(form.includes(secretBody), `column ${column}`).toBe(false);
      }
    }
    const [all] = await server.database.db.read.query<RowDataPacket[]>("SELECT * FROM api_keys");
    expect(JSON.stringify(all)).not.toContain(secretBody);
  });

  it("makes a key that a running server accepts within 1 second", async () => {
    const created = await createKeyWithCliNoWait("aff-x");
    const started = performance.now();
    let answer = await top(created.key);
    while (answer.status === 401 && performance.now() - started < 1_000) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      answer = await top(created.key);
    }
    console.info(`new key accepted ${Math.round(performance.now() - started)} ms after keys create returned`);
    expect(answer).toMatchObject({ status: 200, body: X_BODY });
  });

  it("says on stderr when no user of the affiliate is known yet, and still creates the key", async () => {
    const result = await cli("keys", "create", "--affiliate", "aff-typo");
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(noUsersWarning("aff-typo"));
    expect(result.stdout).toMatch(
      /^Created key key_[0-9a-f]{16} for affiliate aff-typo\.\n\n {2}tw_sk_[0-9A-Za-z]{38}\n\n/,
    );
    expect((await listKeys()).some((k) => k.affiliateId === "aff-typo")).toBe(true);
  });

  it("--publishable --origin makes a tw_pub_ key for those origins; listed with its kind and origins", async () => {
    const publishable = (...origins: string[]) =>
      cli("keys", "create", "--affiliate", "aff-x", "--publishable", ...origins.flatMap((o) => ["--origin", o]));
    const result = await publishable("https://board.example.com", "http://localhost:5173");
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
    const match =
      /^Created publishable key (key_[0-9a-f]{16}) for affiliate aff-x \(usable from https:\/\/board\.example\.com, http:\/\/localhost:5173\)\.\n\n {2}(tw_pub_[0-9A-Za-z]{38})\n\n/.exec(
        result.stdout,
      );
    expect(match).not.toBeNull();
    const listed = (await listKeys()).find((k) => k.id === match?.[1]);
    expect([listed?.kind, listed?.allowedOrigins]).toEqual([
      "publishable",
      ["https://board.example.com", "http://localhost:5173"],
    ]);
    const overlay = await publishable();
    expect({ code: overlay.code, stderr: overlay.stderr }).toEqual({ code: 0, stderr: "" });
    expect(overlay.stdout).toMatch(
      /^Created publishable key key_[0-9a-f]{16} for affiliate aff-x \(for the overlay only: no --origin, so no other site's page can read with it\)\.\n\n {2}tw_pub_[0-9A-Za-z]{38}\n\n/,
    );
    const path = await publishable("https://a.example/x");
    expect([path.code, path.stderr.split("\n")[0]]).toEqual([
      2,
      'error: "https://a.example/x" is not an exact origin; write it as https://a.example (no path, query, user or default port, host in lower case)',
    ]);
  });

  it("makes a different key every time", async () => {
    const first = await createKeyWithCli("aff-x");
    const second = await createKeyWithCli("aff-x");
    expect(first.key).not.toBe(second.key);
    expect(first.id).not.toBe(second.id);
  });
});

describe("keys list", () => {
  it("lists every key with its affiliate, label, state and limit, and never a secret", async () => {
    const created = await createKeyWithCli("aff-x", "--label", "listed", "--rate-limit", "50/30s");
    const json = await cli("keys", "list", "--json");
    const table = await cli("keys", "list");
    expect(table.code).toBe(0);
    for (const output of [json.stdout, table.stdout]) {
      expect(output).not.toContain(created.key);
      expect(output).not.toContain(created.key.slice(6));
      expect(output).not.toMatch(/tw_[A-Za-z0-9_-]{32}/);
      expect(output).not.toMatch(/tw_(sk|pub)_/);
    }
    const listed = (await listKeys()).find((k) => k.id === created.id);
    expect(listed).toEqual({
      id: created.id,
      affiliateId: "aff-x",
      kind: "secret",
      allowedOrigins: [],
      status: "active",
      label: "listed",
      createdAt: expect.any(Number),
      revokedAt: null,
      expiresAt: null,
      rateLimit: { points: 50, windowSeconds: 30 },
      defaultRankBy: null,
    });
    expect(Math.abs((listed?.createdAt as number) - Date.now() / 1000)).toBeLessThan(120);
    expect(table.stdout).toContain(created.id);
    // A header, and every row's columns start where the header's do (no values running together).
    const lines = table.stdout.trimEnd().split("\n");
    const header = lines[0] ?? "";
    expect(header).toMatch(/^ID +AFFILIATE +KIND +STATUS +RATE LIMIT +RANK BY +CREATED +EXPIRES +ORIGINS +LABEL$/);
    const starts = ["AFFILIATE", "KIND", "STATUS", "RATE LIMIT", "RANK BY", "CREATED", "EXPIRES", "ORIGINS"].map((h) =>
      header.indexOf(h),
    );
    for (const line of lines.slice(1)) {
      for (const start of starts) expect([line, line[start - 1], line[start - 2]]).toEqual([line, " ", " "]);
    }
    expect(table.stdout).toMatch(new RegExp(`${created.id}\\s+aff-x\\s+secret\\s+active\\s+50/30s\\s+default\\s`));
  });
});

describe("keys revoke", () => {
  it("a running server refuses the revoked key within 1 second, and for good", async () => {
    const created = await createKeyWithCli("aff-x", "--label", "to-revoke");
    // Used once, so the server has it cached as valid.
    expect((await top(created.key)).status).toBe(200);
    const revoke = await cli("keys", "revoke", created.id);
    const revokedAt = performance.now();
    expect(revoke).toEqual({
      code: 0,
      stdout: `Revoked ${created.id}. Running servers refuse it within 1 second.\n`,
      stderr: "",
    });
    let latencyMs = Number.POSITIVE_INFINITY;
    while (performance.now() - revokedAt < 2_000) {
      const answer = await top(created.key);
      if (answer.status === 401) {
        latencyMs = performance.now() - revokedAt;
        expect(answer.body).toEqual(UNAUTHENTICATED_BODY);
        break;
      }
      // Until it flips the key works normally: no other error in between.
      expect(answer).toMatchObject({ status: 200, body: X_BODY });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    console.info(`revoked key refused ${Math.round(latencyMs)} ms after keys revoke returned`);
    expect(latencyMs).toBeLessThan(1_000);
    for (let i = 0; i < 5; i += 1) expect((await top(created.key)).status).toBe(401);
    const listed = (await listKeys()).find((k) => k.id === created.id);
    expect(typeof listed?.revokedAt).toBe("number");
  }, 15_000);

  it("leaves the affiliate's other keys working", async () => {
    const kept = await createKeyWithCli("aff-x");
    const revoked = await createKeyWithCli("aff-x");
    expect((await cli("keys", "revoke", revoked.id)).code).toBe(0);
    await keysFollowed();
    expect(await top(kept.key)).toMatchObject({ status: 200, body: X_BODY });
    expect(await top(revoked.key)).toMatchObject({ status: 401, body: UNAUTHENTICATED_BODY });
  });
});

describe("a key sees only its own affiliate", () => {
  it("two affiliates, each key gets only its own users", async () => {
    const a = await createKeyWithCli("aff-a");
    const b = await createKeyWithCli("aff-b");
    expect(await top(a.key)).toMatchObject({
      status: 200,
      body: {
        data: [
          { username: "anna", avatar: DEFAULT_AVATAR_URL, totalWagered: 100.00000001 },
          { username: "arne", avatar: "https://img.example/arne.png", totalWagered: 7 },
        ],
        errors: null,
      },
    });
    expect(await top(b.key)).toMatchObject({
      status: 200,
      body: { data: [{ username: "bea", avatar: "https://img.example/bea.png", totalWagered: 5000.5 }], errors: null },
    });
    // An affiliate without users or wagers sees an empty list, not someone else's.
    const empty = await createKeyWithCli("aff-empty");
    expect(await top(empty.key)).toMatchObject({ status: 200, body: { data: [], errors: null } });
  });
});

describe("per-key rate limits", () => {
  it("--rate-limit 3/60s gives exactly 3 successes, then 429", async () => {
    const created = await createKeyWithCli("aff-x", "--rate-limit", "3/60s");
    const answers = [];
    for (let i = 0; i < 5; i += 1) answers.push(await top(created.key));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers.map((a) => a.policy)).toEqual(Array(5).fill('"key";q=3;w=60'));
    expect(answers.map((a) => /r=(\d+)/.exec(a.rateLimit ?? "")?.[1])).toEqual(["2", "1", "0", "0", "0"]);
  });

  it("keys set-rate-limit changes a key's limit on a running server, and back to the default", async () => {
    const created = await createKeyWithCli("aff-x");
    expect((await top(created.key)).policy).toBe('"default";q=100000;w=60');
    const set = await cli("keys", "set-rate-limit", created.id, "2/60s");
    expect(set).toEqual({
      code: 0,
      stdout: `Rate limit of ${created.id} is now 2/60s. Running servers apply it within 1 second.\n`,
      stderr: "",
    });
    expect((await listKeys()).find((k) => k.id === created.id)?.rateLimit).toEqual({ points: 2, windowSeconds: 60 });
    const started = performance.now();
    let answer = await top(created.key);
    while (answer.policy !== '"key";q=2;w=60' && performance.now() - started < 1_000) {
      expect(answer.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await top(created.key);
    }
    // The first call under the new limit, then one more, then refused.
    expect([answer.status, answer.policy, answer.rateLimit?.replace(/;t=\d+$/, "")]).toEqual([
      200,
      '"key";q=2;w=60',
      '"key";r=1',
    ]);
    expect((await top(created.key)).status).toBe(200);
    expect((await top(created.key)).status).toBe(429);

    expect((await cli("keys", "set-rate-limit", created.id, "default")).code).toBe(0);
    expect((await listKeys()).find((k) => k.id === created.id)?.rateLimit).toBeNull();
    const back = performance.now();
    answer = await top(created.key);
    while (answer.policy !== '"default";q=100000;w=60' && performance.now() - back < 1_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await top(created.key);
    }
    expect([answer.status, answer.policy]).toEqual([200, '"default";q=100000;w=60']);
  }, 20_000);
});

// Concurrent: none of these may write, so they cannot disturb each other's before/after snapshot.
describe.concurrent("usage errors exit 2, data errors 1, with a clear message, and change nothing", () => {
  const usage = (message: string) => expect.stringMatching(new RegExp(`^error: ${escapeRegExp(message)}\\n\\nusage: `));
  function escapeRegExp(text: string): string {
    return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  const cases: [string, string[], string][] = [
    [
      "create without --affiliate",
      ["keys", "create", "--json"],
      "keys create needs --affiliate <affiliateId> (1 to 64 characters)",
    ],
    [
      "create with an empty --affiliate",
      ["keys", "create", "--affiliate", "", "--json"],
      "keys create needs --affiliate <affiliateId> (1 to 64 characters)",
    ],
    [
      "create with a malformed --rate-limit",
      ["keys", "create", "--affiliate", "aff-x", "--rate-limit", "3perminute"],
      '--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "3perminute"',
    ],
    [
      "create with a zero --rate-limit",
      ["keys", "create", "--affiliate", "aff-x", "--rate-limit", "0/60s"],
      '--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "0/60s"',
    ],
    ["revoke without an id", ["keys", "revoke"], "keys revoke needs the key id (see: npm run cli -- keys list)"],
    [
      "set-rate-limit with a bad limit",
      ["keys", "set-rate-limit", "key_doesnotexist", "lots"],
      '--rate-limit must look like <points>/<seconds>s, e.g. 120/60s; got "lots"',
    ],
    ["an unknown keys command", ["keys", "rename"], 'unknown keys command "rename"'],
  ];

  for (const [name, args, message] of cases) {
    it(name, async ({ expect }) => {
      const before = await storedKeys();
      const result = await cli(...args);
      expect(result).toEqual({ code: 2, stdout: "", stderr: usage(message) });
      expect(await storedKeys()).toEqual(before);
    });
  }

  // An unknown key id is a data error (issue 13): exit 1 with one line, not the usage.
  const dataCases: [string, string[]][] = [
    ["revoke an unknown id", ["keys", "revoke", "key_doesnotexist"]],
    ["set-rate-limit on an unknown id", ["keys", "set-rate-limit", "key_doesnotexist", "5/60s"]],
  ];
  for (const [name, args] of dataCases) {
    it(`${name} exits 1 with one line`, async ({ expect }) => {
      const before = await storedKeys();
      const result = await cli(...args);
      expect(result).toEqual({
        code: 1,
        stdout: "",
        stderr: "error: no key with id key_doesnotexist (see: npm run cli -- keys list)\n",
      });
      expect(await storedKeys()).toEqual(before);
    });
  }

  it("a misspelt option or a missing option value is a usage error too", async ({ expect }) => {
    const before = await storedKeys();
    const misspelt = await cli("keys", "create", "--affilate", "aff-x", "--json");
    expect(misspelt.code).toBe(2);
    expect(misspelt.stdout).toBe("");
    expect(misspelt.stderr).toMatch(/^error: Unknown option '--affilate'/);
    expect(misspelt.stderr).toContain("\n\nusage: ");
    const noValue = await cli("keys", "create", "--affiliate");
    expect(noValue.code).toBe(2);
    expect(noValue.stdout).toBe("");
    expect(noValue.stderr).toMatch(/^error: Option '--affiliate <value>' argument missing/);
    expect(await storedKeys()).toEqual(before);
  });
});

describe("keys rotate", () => {
  it("reports the old key's real end: the overlap, or its own earlier expiry", async () => {
    const created = JSON.parse(
      (await cli("keys", "create", "--affiliate", "aff-rot-cli", "--expires-in", "10m", "--json")).stdout,
    ) as {
      id: string;
      expiresAt: number;
    };
    const result = await cli("keys", "rotate", created.id, "--overlap", "1d", "--json");
    expect(result.code).toBe(0);
    const rotated = JSON.parse(result.stdout) as Record<string, unknown>;
    // A day of overlap does not stretch a key that expires in ten minutes.
    expect(rotated).toMatchObject({ replaces: created.id, oldKeyExpiresAt: created.expiresAt, oldKeyRevokedAt: null });
    const listed = await listKeys();
    expect(listed.find((k) => k.id === created.id)?.expiresAt).toBe(created.expiresAt);
    const fresh = listed.find((k) => k.id === rotated.id);
    expect(fresh).toMatchObject({ affiliateId: "aff-rot-cli", expiresAt: created.expiresAt });

    const text = await cli("keys", "rotate", String(rotated.id), "--overlap", "90s");
    expect(text.code).toBe(0);
    const until = (await listKeys()).find((k) => k.id === rotated.id)?.expiresAt as number;
    expect(Math.abs(until - (Date.now() / 1000 + 90))).toBeLessThan(30);
    expect(text.stdout).toContain(
      `${rotated.id} keeps working until ${new Date(until * 1000).toISOString().replace(/\.\d+Z$/, "Z")}; `,
    );
  }, 30_000);
});
