/**
 * Stored secrets follow WEBHOOK_SECRET_KEY (issue 38): secrets stored plain before a key was set are sealed under
 * it once one is, and a rotation of the key itself (new key, the old one in WEBHOOK_SECRET_KEY_PREVIOUS) seals
 * every endpoint secret, previous endpoint secret and signing key (a result key and a live key) again under the new
 * key; after that the new key
 * alone opens them and the old one opens none. A value no key opens is counted and left alone.
 */
import { randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import { resealSecrets } from "../../src/signing/sql/secret-reseal.js";
import { useTestDatabase } from "../support/database.js";

const KEY_A = randomBytes(32);
const KEY_B = randomBytes(32);
const SECRETS = {
  ep_1: "whsec_one",
  ep_2: "whsec_two",
  previous: "whsec_old",
  signing: "private-d-value",
  live: "live-private-d-value",
};
type Stored = keyof typeof SECRETS;
const NONE_OPENED = { ep_1: undefined, ep_2: undefined, previous: undefined, signing: undefined, live: undefined };

describe("re-sealing stored secrets", () => {
  const database = useTestDatabase("secret_reseal");
  const pool = () => database.db.write;

  async function stored(): Promise<Record<Stored, Buffer>> {
    const [endpoints] = await pool().query<RowDataPacket[]>(
      "SELECT id, secret, previous_secret FROM webhook_endpoints ORDER BY id",
    );
    const [keys] = await pool().query<RowDataPacket[]>("SELECT private_sealed FROM signing_keys WHERE kid = 'kid_1'");
    const [live] = await pool().query<RowDataPacket[]>(
      "SELECT private_sealed FROM live_signing_keys WHERE kid = 'kid_2'",
    );
    return {
      ep_1: endpoints[0]?.secret as Buffer,
      ep_2: endpoints[1]?.secret as Buffer,
      previous: endpoints[1]?.previous_secret as Buffer,
      signing: keys[0]?.private_sealed as Buffer,
      live: live[0]?.private_sealed as Buffer,
    };
  }

  /** What `box` opens of the stored values (undefined where it cannot). */
  async function opened(box: SecretBox): Promise<Record<string, string | undefined>> {
    const rows = await stored();
    const attempt = (aad: string, value: Buffer | undefined) => {
      try {
        return value === undefined ? undefined : box.open(aad, value);
      } catch {
        return undefined;
      }
    };
    return {
      ep_1: attempt("ep_1", rows.ep_1),
      ep_2: attempt("ep_2", rows.ep_2),
      previous: attempt("ep_2", rows.previous),
      signing: attempt("signing-key:kid_1", rows.signing),
      live: attempt("live-signing-key:kid_2", rows.live),
    };
  }

  it("plain secrets are sealed once a key is set, then a rotation moves them to the new key", async () => {
    const plain = new SecretBox(undefined);
    await pool().query("INSERT INTO affiliates (external_id, created_at) VALUES ('aff-reseal', 0)");
    await pool().query(
      `INSERT INTO webhook_endpoints (id, affiliate_id, url, event_types, secret, previous_secret, created_at, updated_at)
       SELECT 'ep_1', id, 'https://a.example/h', '[]', ?, NULL, 0, 0 FROM affiliates
       UNION ALL SELECT 'ep_2', id, 'https://b.example/h', '[]', ?, ?, 0, 0 FROM affiliates`,
      [plain.seal("ep_1", SECRETS.ep_1), plain.seal("ep_2", SECRETS.ep_2), plain.seal("ep_2", SECRETS.previous)],
    );
    await pool().query(
      "INSERT INTO signing_keys (kid, public_x, private_sealed, created_at) VALUES ('kid_1', 'x', ?, 0)",
      [plain.seal("signing-key:kid_1", SECRETS.signing)],
    );
    await pool().query(
      "INSERT INTO live_signing_keys (kid, public_x, private_sealed, created_at) VALUES ('kid_2', 'x', ?, 0)",
      [plain.seal("live-signing-key:kid_2", SECRETS.live)],
    );
    expect((await stored()).ep_1.toString("utf8")).toBe("plain:whsec_one");

    const boxA = new SecretBox(KEY_A);
    expect(await resealSecrets(pool(), boxA)).toEqual({ resealed: 5, unreadable: 0 });
    for (const value of Object.values(await stored())) expect(value.toString("utf8").startsWith("enc1:")).toBe(true);
    expect(await opened(boxA)).toEqual(SECRETS);
    expect(await resealSecrets(pool(), boxA)).toEqual({ resealed: 0, unreadable: 0 });

    // Rotation: B is the key, A the previous one. Before re-sealing, the ring opens everything A sealed.
    const ring = new SecretBox(KEY_B, [KEY_A]);
    expect(await opened(ring)).toEqual(SECRETS);
    expect(await opened(new SecretBox(KEY_B))).toEqual(NONE_OPENED);
    expect(await resealSecrets(pool(), ring)).toEqual({ resealed: 5, unreadable: 0 });
    expect(await opened(new SecretBox(KEY_B))).toEqual(SECRETS);
    expect(await opened(boxA)).toEqual(NONE_OPENED);
  });

  it("a value no key of the ring opens is counted and left as it is", async () => {
    const before = await stored();
    expect(await resealSecrets(pool(), new SecretBox(randomBytes(32), [KEY_A]))).toEqual({
      resealed: 0,
      unreadable: 5,
    });
    expect(await stored()).toEqual(before);
  });
});
