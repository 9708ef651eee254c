/**
 * Restricted keys made by the keys CLI (a separate process, as `npm run cli` runs it) and used at
 * once on an already running server whose change feed polls only every 60 s: the key works on its
 * very next call (keys/core/key-catch-up.ts), with its scopes (403 naming the one it lacks); a
 * publishable key never gets a write scope and an unknown scope is a usage error; `keys list`
 * shows the scopes of restricted keys; `keys rotate` keeps them and its new key works at once too.
 *
 * Needs a build (`npm test` builds first).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AVATAR_URL } from "../../src/platform/config.js";
import { argv, cliOutcome } from "../support/cli.js";
import { FEB_1_2025, JAN_1_2025 } from "../support/dates.js";
import { addBoard } from "../support/fixtures.js";
import { restTop } from "../support/rest.js";
import { useTestServer } from "../support/server.js";

const PERIOD = { startTimestamp: JAN_1_2025, endTimestamp: FEB_1_2025 - 1, numUsers: 10 };
const MISSING_BOARDS = {
  data: null,
  errors: [{ code: "permission_denied", message: "this API key lacks the scope boards:read" }],
};

const server = useTestServer("keys_scopes_cli", { CHANGE_FEED_POLL_MS: "60000", CHANGE_FEED_MAX_LAG_MS: "120000" });

const cli = (...args: string[]) => cliOutcome(args, server.database.url);

async function top(key: string): Promise<[number, unknown]> {
  const reply = await restTop(server.baseUrl, key, PERIOD);
  return [reply.status, reply.json];
}

beforeAll(async () => {
  await addBoard(server.database.db, "aff-e", [["e-1", "eve", "", ["42", JAN_1_2025 + 10]]]);
});

describe("keys create --scope", () => {
  it("makes a restricted key that the running server accepts on its very next call", async () => {
    const created = await cli("keys", "create", "--affiliate", "aff-e", "--scope", "boards:read", "--json");
    expect([created.code, created.stderr]).toEqual([0, ""]);
    const json = JSON.parse(created.stdout) as Record<string, unknown>;
    expect(Object.keys(json)).toEqual(["id", "key", "affiliateId", "scopes"]);
    expect(json.scopes).toEqual(["boards:read"]);
    expect(server.app.keys.lookup(String(json.key)).found).toBe(false); // the feed has not polled since
    expect(await top(String(json.key))).toEqual([
      200,
      { data: [{ username: "eve", avatar: DEFAULT_AVATAR_URL, totalWagered: 42 }], errors: null },
    ]);
  });

  it("a key without boards:read is known at once and refused 403 naming the scope; rotation keeps its scopes", async () => {
    const created = await cli(...argv("keys create --affiliate aff-e --scope races:read --scope races:write"));
    expect([created.code, created.stderr]).toEqual([0, ""]);
    const [, id, secret] =
      /^Created key (key_[0-9a-f]{16}) for affiliate aff-e \(scopes races:read,races:write\)\.\n\n {2}(tw_sk_\S+)\n/.exec(
        created.stdout,
      ) ?? ["", "", ""];
    expect(await top(secret ?? "")).toEqual([403, MISSING_BOARDS]);
    const rotated = await cli("keys", "rotate", id ?? "", "--json");
    expect(rotated.code).toBe(0);
    const fresh = JSON.parse(rotated.stdout) as { id: string; key: string };
    expect(await top(fresh.key)).toEqual([403, MISSING_BOARDS]);
    const listed = JSON.parse((await cli("keys", "list", "--json")).stdout) as Record<string, unknown>[];
    expect(listed.filter((k) => k.id === id || k.id === fresh.id).map((k) => k.scopes)).toEqual([
      ["races:read", "races:write"],
      ["races:read", "races:write"],
    ]);
    const table = await cli("keys", "list");
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(
      /^ID +AFFILIATE +KIND +STATUS +RATE LIMIT +RANK BY +CREATED +EXPIRES +ORIGINS +SCOPES +LABEL$/,
    );
    const scopesAt = header?.indexOf("SCOPES") ?? -1;
    expect(
      rows
        .find((r) => r.startsWith(fresh.id))
        ?.slice(scopesAt)
        .trim(),
    ).toBe("races:read,races:write");
    expect(rows.filter((r) => r.slice(scopesAt).trim() === "boards:read")).toHaveLength(1);
  });

  it("refuses a write scope for a publishable key and an unknown scope, naming the field, creating nothing", async () => {
    const before = (await cli("keys", "list", "--json")).stdout;
    expect(
      await cli(
        "keys",
        "create",
        "--affiliate",
        "aff-e",
        "--publishable",
        "--origin",
        "https://b.example.com",
        "--scope",
        "races:write",
      ),
    ).toEqual({
      code: 2,
      stdout: "",
      stderr: expect.stringMatching(
        /^error: scopes\[0\] a publishable key is read-only and cannot have the scope races:write \(it may have boards:read, races:read\)\n\nusage: topwagers keys create /,
      ),
    });
    expect(await cli("keys", "create", "--affiliate", "aff-e", "--scope", "boards")).toEqual({
      code: 2,
      stdout: "",
      stderr: expect.stringMatching(
        /^error: scopes\[0\] "boards" is not a scope; the scopes are boards:read, races:read, races:write, webhooks:write\n\nusage: /,
      ),
    });
    expect((await cli("keys", "list", "--json")).stdout).toBe(before);
  });
});
