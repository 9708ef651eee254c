/**
 * The chain of an affiliate's signed results holds when its races are frozen at once (issue 36 item 2): two
 * instances, each freezing four races at a time, freeze twelve races of one affiliate and four of another that
 * all ended together. Each affiliate's results then count 1, 2, 3, … without a gap or a repeat, and each names
 * the one before it by the SHA-256 of that one's JWS as stored (recomputed here from the bytes), the first none.
 */
import { createHash } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { mariadbStandings } from "../../src/boards/sql/standings-store.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { newRaces, type Races } from "../../src/races/core/races.js";
import { mariadbRaces } from "../../src/races/sql/race-store.js";
import { makeSigningKey } from "../../src/signing/core/keys.js";
import { Signer } from "../../src/signing/core/signer.js";
import { mariadbSigningKeys } from "../../src/signing/sql/signing-keys.js";
import { NOV_1 } from "../support/dates.js";
import { addBoard, affiliateKey } from "../support/fixtures.js";
import { ok } from "../support/races.js";
import { useTestServer } from "../support/server.js";

const ISSUER = "https://casino.example";
const server = useTestServer("signed_chain_concurrency", { ISSUER });
const END = NOV_1 + 86_400 - 1;
const clock = { now: NOV_1 + 100 };

/** One instance's Races, freezing four races at a time with its own signer. */
function instance(): Races {
  const db = server.database.db;
  const keys = mariadbSigningKeys(db.write, new SecretBox(undefined));
  return newRaces({
    store: mariadbRaces(db.write),
    standings: mariadbStandings(db.read),
    freezeStandings: mariadbStandings(db.write),
    signer: new Signer(keys, { issuer: ISSUER }),
    defaultAvatarUrl: "",
    now: () => clock.now,
    tickConcurrency: 4,
  });
}

interface Link {
  readonly raceId: string;
  readonly sequence: number;
  readonly sha256: string;
  readonly previous: { raceId: string; sha256: string } | null;
}

/** The affiliate's stored results in chain order, each with what its signed payload says of its place. */
async function chainOf(affiliateId: number): Promise<Link[]> {
  const [rows] = await server.database.db.read.query<RowDataPacket[]>(
    `SELECT r.public_id, s.sequence, s.sha256, s.jws FROM race_signed_results s JOIN races r ON r.id = s.race_id
      WHERE s.affiliate_id = ? ORDER BY s.sequence`,
    [affiliateId],
  );
  return rows.map((row) => {
    const jws = Buffer.from(row.jws).toString("ascii");
    const payload = JSON.parse(Buffer.from(jws.split(".")[1] as string, "base64url").toString("utf8")) as {
      raceId: string;
      chain: { sequence: number; previous: { raceId: string; sha256: string } | null };
    };
    expect(payload.raceId).toBe(String(row.public_id));
    expect(payload.chain.sequence).toBe(Number(row.sequence));
    expect(String(row.sha256)).toBe(createHash("sha256").update(jws, "ascii").digest("hex"));
    return {
      raceId: payload.raceId,
      sequence: payload.chain.sequence,
      sha256: String(row.sha256),
      previous: payload.chain.previous,
    };
  });
}

describe("the chain of signed results under concurrent freezes", () => {
  it("counts each affiliate's results without a gap or a repeat, each naming the one before", async () => {
    const db = server.database.db;
    await addBoard(db, "chain-a", [["ca1", "ann", "", ["300", NOV_1 + 10]]]);
    await addBoard(db, "chain-b", [["cb1", "bob", "", ["200", NOV_1 + 20]]]);
    const keys = mariadbSigningKeys(db.write, new SecretBox(undefined));
    const key = await makeSigningKey();
    await keys.insert(key, NOV_1);
    await keys.activate(key.kid, NOV_1);
    const affiliates = { a: await affiliateKey(db.read, "chain-a"), b: await affiliateKey(db.read, "chain-b") };
    const first = instance();
    const created: Record<"a" | "b", string[]> = { a: [], b: [] };
    for (const [name, count] of [
      ["a", 12],
      ["b", 4],
    ] as const) {
      for (let i = 0; i < count; i++) {
        const race = ok(
          await first.create(affiliates[name], {
            slug: `chain-${name}-${i}`,
            title: `Chain ${name} ${i}`,
            startTimestamp: NOV_1,
            endTimestamp: END,
            prizes: ["10.00"],
            reviewSeconds: 0,
          }),
        );
        created[name].push(race.race.id);
      }
    }
    clock.now = END + 1;
    const instances = [first, instance()];
    let frozen = 0;
    for (let round = 0; frozen < 16 && round < 20; round++) {
      const counts = await Promise.all(instances.map((races) => races.tick()));
      frozen += counts.reduce((sum, count) => sum + count.frozen, 0);
    }
    expect(frozen).toBe(16);
    for (const name of ["a", "b"] as const) {
      const chain = await chainOf(affiliates[name]);
      expect(chain.map((link) => link.sequence)).toEqual(created[name].map((_, i) => i + 1));
      expect(chain.map((link) => link.raceId).sort()).toEqual([...created[name]].sort());
      expect(chain.map((link) => link.previous)).toEqual([
        null,
        ...chain.slice(0, -1).map((link) => ({ raceId: link.raceId, sha256: link.sha256 })),
      ]);
    }
  }, 120_000);
});
