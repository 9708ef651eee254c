/**
 * A race frozen and signed as an instance does it (its own Races with a signer on the database's active key),
 * for the tests of what reads signed results (the verify page, the docs' offline checks).
 */
import type { ActiveSigningKey } from "../../src/ports/signing.js";
import { makeSigningKey } from "../../src/signing/keys.js";
import { Signer } from "../../src/signing/signer.js";
import type { Database } from "../../src/storage/database.js";
import { mariadbSigningKeys } from "../../src/storage/signing-keys.js";
import { WebhookSecretBox } from "../../src/storage/webhook-secrets.js";
import { NOV_1 } from "./dates.js";
import { addBoard, affiliateKey } from "./fixtures.js";
import { instanceRaces, ok } from "./races.js";

/** Makes and activates a signing key on `db` (no WEBHOOK_SECRET_KEY: stored plain). */
export async function activeSigningKey(db: Database, at = NOV_1): Promise<ActiveSigningKey> {
  const keys = mariadbSigningKeys(db.write, new WebhookSecretBox(undefined));
  const key = await makeSigningKey();
  await keys.insert(key, at);
  await keys.activate(key.kid, at);
  return key;
}

/**
 * Affiliate `affiliate` with alice (300) and bob (200.5) on November 1st, and a one-day race of theirs with
 * prizes 100.00 and 50.00 frozen and signed by `issuer` with the active key; the race's id.
 */
export async function signedRace(db: Database, affiliate: string, issuer: string): Promise<string> {
  await addBoard(db, affiliate, [
    ["u1", "alice", "", ["300", NOV_1 + 10]],
    ["u2", "bob", "", ["200.5", NOV_1 + 20]],
  ]);
  let now = NOV_1 - 100;
  const signer = new Signer(mariadbSigningKeys(db.write, new WebhookSecretBox(undefined)), { issuer, refreshMs: 0 });
  const races = instanceRaces(db, { now: () => now, freeze: "primary", signer });
  const end = NOV_1 + 86_399;
  const created = ok(
    await races.create(await affiliateKey(db.read, affiliate), {
      ...{ slug: "november-first", title: "November 1st race", startTimestamp: NOV_1, endTimestamp: end },
      ...{ prizes: ["100.00", "50.00"], reviewSeconds: 0 },
    }),
  );
  now = end + 1;
  await races.tick();
  return created.race.id;
}
