/**
 * `topwagers signing-keys …`: make, list, activate and retire the Ed25519 keys that sign final race
 * results (published at GET /.well-known/jwks.json) and, with `--live`, the live keys that sign live races and
 * boards (GET /.well-known/jwks-live.json; docs/verify.md). A key is published from the moment it is made; every
 * running server signs with the one active key of each purpose and follows an activation within a few seconds,
 * without a restart. The private half is sealed with WEBHOOK_SECRET_KEY at rest and never printed.
 */
import { loadConfig } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { SecretBox } from "../platform/database/secret-box.js";
import type { PublishedSigningKey, SigningKeyPurpose, SigningKeyStore } from "../ports/signing.js";
import { liveInstances } from "../schema/instance-registry.js";
import { makeSigningKey } from "../signing/core/keys.js";
import { sealedWith, unopenedActiveKeys } from "../signing/sql/sealed-keys.js";
import { mariadbSigningKeys } from "../signing/sql/signing-keys.js";
import { alignColumns } from "./columns.js";
import { DataError, isoSeconds, parseCommandOptions, printJson, UsageError, withDatabase } from "./common.js";
import { RUN } from "./usage.js";

/** What a command works with: the results' keys, the live keys, and a check that the servers can open a key. */
interface SigningKeysAt {
  readonly stores: Record<SigningKeyPurpose, SigningKeyStore>;
  /**
   * Refuses (DataError) unless every live server can open a key sealed by this command's key (`sealedBy`: its
   * fingerprint; "" stored plain; default WEBHOOK_SECRET_KEY's), and, with no server registered, unless this
   * command's key opens the active keys already stored (the servers' key did).
   */
  readonly checkServersOpen: (sealedBy?: string) => Promise<void>;
  /** The fingerprint of the key of this command's ring that sealed a stored key; undefined when none opens it. */
  readonly sealedWith: (purpose: SigningKeyPurpose, kid: string) => Promise<string | undefined>;
}

/** Runs `work` with the results' keys, the live keys and the check against the servers. */
function withSigningKeys<T>(work: (at: SigningKeysAt) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const box = new SecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys);
  return withDatabase(
    (db) =>
      work({
        stores: {
          result: mariadbSigningKeys(db.write, box, "result"),
          live: mariadbSigningKeys(db.write, box, "live"),
        },
        checkServersOpen: (sealedBy = box.fingerprints().seals) => checkServersOpen(db, box, sealedBy),
        sealedWith: (purpose, kid) => sealedWith(db.write, box, purpose, kid),
      }),
    { config },
  );
}

/**
 * A key every server can use (issue 47, item 4): the live servers register the fingerprints of the keys they open
 * with (schema/instance-registry.ts); a key sealed by one none of a server's keys is would be reported made and active
 * while that server could sign nothing with it. With no server registered, the keys already stored stand for theirs.
 */
async function checkServersOpen(db: Database, box: SecretBox, sealedBy: string): Promise<void> {
  if (sealedBy === "") return; // stored plain: any instance opens it (and seals it at its next start)
  const servers = (await liveInstances(db.write)).filter((i) => i.role === "serve");
  const refusing = servers.filter((server) => !server.opensWith.includes(sealedBy));
  if (refusing.length > 0) {
    const opens = (i: (typeof refusing)[number]) =>
      `instance ${i.id} (${i.release} on ${i.host}, pid ${i.pid}) opens with ${i.opensWith.length === 0 ? "no key: WEBHOOK_SECRET_KEY is not set there" : i.opensWith.join(", ")}`;
    throw new DataError(
      `refused: the running servers could not open this key: it is sealed under the WEBHOOK_SECRET_KEY with ` +
        `fingerprint ${sealedBy}, and ${refusing.map(opens).join("; ")}. Run this command with the servers' ` +
        "WEBHOOK_SECRET_KEY (docs/operations.md, Rotating WEBHOOK_SECRET_KEY)",
    );
  }
  if (servers.length > 0) return;
  const unopened = await unopenedActiveKeys(db.write, box);
  if (unopened.length > 0) {
    throw new DataError(
      `refused: no server is registered to ask, and this WEBHOOK_SECRET_KEY does not open the keys stored here ` +
        `(${unopened.map((k) => `the active ${k.purpose} key ${k.id}: ${k.message}`).join("; ")}), so the servers ` +
        "that made them could not open a key made here either. Run this command with the servers' WEBHOOK_SECRET_KEY",
    );
  }
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

async function make(purpose: SigningKeyPurpose, activate: boolean, json: boolean): Promise<void> {
  const key = await makeSigningKey();
  const outcome = await withSigningKeys(async ({ stores, checkServersOpen }) => {
    await checkServersOpen();
    await stores[purpose].insert(key, nowSeconds());
    return activate ? stores[purpose].activate(key.kid, nowSeconds()) : "new";
  });
  if (json) {
    printJson({ kid: key.kid, purpose, state: outcome === "activated" ? "active" : "new" });
    return;
  }
  const made = purpose === "live" ? `the live key ${key.kid}` : key.kid;
  process.stdout.write(
    outcome === "activated"
      ? `Made ${made} and made it active: running servers sign with it within a few seconds.\n`
      : `Made ${made}; it is published now. Activate it once caches hold it (5 minutes): ${RUN} signing-keys activate ${key.kid}\n`,
  );
}

async function list(json: boolean): Promise<void> {
  const keys = await withSigningKeys(async ({ stores }) => [
    ...(await stores.result.list()).map((key) => ({ purpose: "result", ...key })),
    ...(await stores.live.list()).map((key) => ({ purpose: "live", ...key })),
  ]);
  if (json) {
    printJson(keys);
    return;
  }
  if (keys.length === 0) {
    process.stdout.write(`No signing keys yet. Make one with: ${RUN} signing-keys make --activate\n`);
    return;
  }
  const when = (at: number | null) => (at === null ? "-" : isoSeconds(at));
  const rows = keys.map((k: PublishedSigningKey & { purpose: string }) => [
    k.purpose,
    k.kid,
    k.state,
    when(k.createdAt),
    when(k.activatedAt),
    when(k.retiredAt),
  ]);
  process.stdout.write(alignColumns([["PURPOSE", "KID", "STATE", "CREATED", "ACTIVATED", "RETIRED"], ...rows]));
}

async function change(sub: "activate" | "retire", kid: string | undefined): Promise<void> {
  if (kid === undefined) throw new UsageError(`signing-keys ${sub} needs the key id (see: ${RUN} signing-keys list)`);
  // A key id names one key of one purpose: the results' keys are asked first, then the live keys.
  const outcome = await withSigningKeys(async ({ stores, checkServersOpen, sealedWith }) => {
    let found: Awaited<ReturnType<SigningKeyStore["activate"] | SigningKeyStore["retire"]>> = "not_found";
    for (const purpose of ["result", "live"] as const) {
      if (found !== "not_found") break;
      if (sub === "activate" && (await stores[purpose].list()).some((k) => k.kid === kid && k.state === "new")) {
        // A key the servers cannot open never becomes the one they sign with.
        const by = await sealedWith(purpose, kid);
        if (by === undefined) {
          throw new DataError(`refused: ${kid} does not open with this WEBHOOK_SECRET_KEY (nor a previous one) either`);
        }
        await checkServersOpen(by);
      }
      const store = stores[purpose];
      found = await (sub === "activate" ? store.activate(kid, nowSeconds()) : store.retire(kid, nowSeconds()));
    }
    return found;
  });
  if (outcome === "not_found") throw new DataError(`no signing key with id ${kid} (see: ${RUN} signing-keys list)`);
  if (outcome === "retired" && sub === "activate") {
    throw new DataError(`${kid} is retired: a retired key never signs again; make a new one`);
  }
  if (outcome === "active") {
    throw new DataError(`${kid} is the active key: make and activate another one first (that retires this one)`);
  }
  process.stdout.write(
    sub === "activate"
      ? `${kid} is active: running servers sign with it within a few seconds; the key before it is retired and stays published.\n`
      : `${kid} is retired: it never signs, and stays published so what it signed still verifies.\n`,
  );
}

export async function signingKeysCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseCommandOptions(rest, {
    activate: { type: "boolean", default: false },
    live: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  switch (sub) {
    case "make":
      return make(values.live ? "live" : "result", values.activate, values.json);
    case "list":
      return list(values.json);
    case "activate":
    case "retire":
      if (positionals.length > 1) throw new UsageError(`signing-keys ${sub} takes one key id`);
      return change(sub, positionals[0]);
    default:
      throw new UsageError(`unknown signing-keys command "${sub ?? ""}"`);
  }
}
