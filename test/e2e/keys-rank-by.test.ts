/**
 * The keys CLI and a key's default ranking, as an operator uses them: `keys create --rank-by
 * weighted` (a site that cannot change its requests gets weighted boards), `keys set-rank-by`
 * (held by a running server within a poll), `keys list` showing it, and usage errors that change
 * nothing. The CLI runs as its own process against the server's database.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { JAN_1_2025 } from "../support/dates.js";
import { addUsers, addWagers, keysFollowed } from "../support/fixtures.js";
import { restTop } from "../support/rest.js";
import { useTestServer } from "../support/server.js";

const PERIOD = { startTimestamp: JAN_1_2025, endTimestamp: JAN_1_2025 + 31 * 86_400 - 1, numUsers: 10 };
const AVATAR = (id: string) => `https://avatars.example.com/${id}.png`;

const server = useTestServer("keys_rank_by");

/** The REST body for these users, with or without the weighted total. */
function body(order: readonly ("ada" | "bea")[], weighted: boolean): string {
  const totals = { ada: ["100", "10"], bea: ["50", "50"] } as const;
  const items = order.map(
    (name) =>
      `{"username":"${name}","avatar":"${AVATAR(`kr-${name}`)}","totalWagered":${totals[name][0]}` +
      `${weighted ? `,"weightedWagered":${totals[name][1]}` : ""}}`,
  );
  return `{"data":[${items.join(",")}],"errors":null}`;
}

async function top(key: string): Promise<[number, string]> {
  const reply = await restTop(server.baseUrl, key, PERIOD);
  return [reply.status, reply.text];
}

const cli = (...args: string[]) => runCli(args, server.database.url);

beforeAll(async () => {
  await addUsers(server.database.db, [
    { id: "kr-ada", affiliateId: "aff-rank", username: "ada", avatar: AVATAR("kr-ada") },
    { id: "kr-bea", affiliateId: "aff-rank", username: "bea", avatar: AVATAR("kr-bea") },
  ]);
  // ada 100 at 10 % (weighted 10), bea 50 at 100 %.
  await addWagers(server.database.db, [
    { id: "kr-1", userId: "kr-ada", amount: "100", placedAt: JAN_1_2025 + 60, weightBps: 1000 },
    { id: "kr-2", userId: "kr-bea", amount: "50", placedAt: JAN_1_2025 + 120 },
  ]);
});

describe("keys --rank-by", () => {
  it("create --rank-by weighted, set-rank-by and list: the server's boards follow", async () => {
    const created = await cli("keys", "create", "--affiliate", "aff-rank", "--rank-by", "weighted", "--json");
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: "" });
    const key = JSON.parse(created.stdout) as { id: string; key: string; defaultRankBy: string };
    expect(Object.keys(key)).toEqual(["id", "key", "affiliateId", "defaultRankBy"]);
    expect(key.defaultRankBy).toBe("weighted");
    await keysFollowed();
    expect(await top(key.key)).toEqual([200, body(["bea", "ada"], true)]);

    const text = await cli("keys", "create", "--affiliate", "aff-rank", "--rank-by", "weighted");
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Created key \S+ for affiliate aff-rank \(boards ranked by weighted by default\)\.\n/);

    const set = await cli("keys", "set-rank-by", key.id, "wagered");
    expect(set).toMatchObject({
      code: 0,
      stdout: `Boards of ${key.id} now rank by wagered unless a request asks otherwise. Running servers apply it within 1 second.\n`,
      stderr: "",
    });
    await keysFollowed();
    expect(await top(key.key)).toEqual([200, body(["ada", "bea"], false)]);
    const list = JSON.parse((await cli("keys", "list", "--json")).stdout) as { id: string; defaultRankBy: unknown }[];
    expect(list.find((k) => k.id === key.id)?.defaultRankBy).toBe("wagered");
    const table = (await cli("keys", "list")).stdout;
    expect(table).toMatch(new RegExp(`${key.id}\\s+aff-rank\\s+secret\\s+active\\s+default\\s+wagered\\s`));

    const cleared = await cli("keys", "set-rank-by", key.id, "default");
    expect(cleared.stdout).toBe(
      `Boards of ${key.id} rank by total wagered unless a request asks otherwise (no default). Running servers apply it within 1 second.\n`,
    );
    const after = JSON.parse((await cli("keys", "list", "--json")).stdout) as { id: string; defaultRankBy: unknown }[];
    expect(after.find((k) => k.id === key.id)?.defaultRankBy).toBeNull();
  });

  it("refuses a bad ranking (exit 2) and an unknown key (exit 1), changing nothing", async () => {
    const before = (await cli("keys", "list", "--json")).stdout;
    const bad = await cli("keys", "create", "--affiliate", "aff-rank", "--rank-by", "WEIGHTED");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('the ranking must be wagered or weighted, got "WEIGHTED"');
    const badSet = await cli("keys", "set-rank-by", "key_whatever", "heavy");
    expect(badSet.code).toBe(2);
    expect(badSet.stderr).toContain('the ranking must be wagered or weighted (or default: no default), got "heavy"');
    const missing = await cli("keys", "set-rank-by", "key_nope", "weighted");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no key with id key_nope");
    expect((await cli("keys", "list", "--json")).stdout).toBe(before);
  });
});
