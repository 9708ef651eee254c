/**
 * `topwagers signing-keys …`: make, list, activate and retire the Ed25519 keys that sign final race
 * results (docs/verify.md). A key is published (GET /.well-known/jwks.json) from the moment it is made;
 * every running server signs with the one active key and follows an activation within a few seconds,
 * without a restart. The private half is sealed with WEBHOOK_SECRET_KEY at rest and never printed.
 */
import { loadConfig } from "../config.js";
import type { PublishedSigningKey, SigningKeyStore } from "../ports/signing.js";
import { makeSigningKey } from "../signing/keys.js";
import { mariadbSigningKeys } from "../storage/signing-keys.js";
import { WebhookSecretBox } from "../storage/webhook-secrets.js";
import { alignColumns } from "./columns.js";
import { DataError, isoSeconds, parseCommandOptions, printJson, UsageError, withDatabase } from "./common.js";
import { RUN } from "./usage.js";

function withSigningKeys<T>(work: (store: SigningKeyStore) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const box = new WebhookSecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys);
  return withDatabase((db) => work(mariadbSigningKeys(db.write, box)), { config });
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

async function make(activate: boolean, json: boolean): Promise<void> {
  const key = await makeSigningKey();
  const outcome = await withSigningKeys(async (store) => {
    await store.insert(key, nowSeconds());
    return activate ? store.activate(key.kid, nowSeconds()) : "new";
  });
  if (json) {
    printJson({ kid: key.kid, state: outcome === "activated" ? "active" : "new" });
    return;
  }
  process.stdout.write(
    outcome === "activated"
      ? `Made ${key.kid} and made it active: running servers sign with it within a few seconds.\n`
      : `Made ${key.kid}; it is published now. Activate it once caches hold it (5 minutes): ${RUN} signing-keys activate ${key.kid}\n`,
  );
}

async function list(json: boolean): Promise<void> {
  const keys = await withSigningKeys((store) => store.list());
  if (json) {
    printJson(keys);
    return;
  }
  if (keys.length === 0) {
    process.stdout.write(`No signing keys yet. Make one with: ${RUN} signing-keys make --activate\n`);
    return;
  }
  const when = (at: number | null) => (at === null ? "-" : isoSeconds(at));
  const rows = keys.map((k: PublishedSigningKey) => [
    k.kid,
    k.state,
    when(k.createdAt),
    when(k.activatedAt),
    when(k.retiredAt),
  ]);
  process.stdout.write(alignColumns([["KID", "STATE", "CREATED", "ACTIVATED", "RETIRED"], ...rows]));
}

async function change(sub: "activate" | "retire", kid: string | undefined): Promise<void> {
  if (kid === undefined) throw new UsageError(`signing-keys ${sub} needs the key id (see: ${RUN} signing-keys list)`);
  const outcome = await withSigningKeys((store) =>
    sub === "activate" ? store.activate(kid, nowSeconds()) : store.retire(kid, nowSeconds()),
  );
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
    json: { type: "boolean", default: false },
  });
  switch (sub) {
    case "make":
      return make(values.activate, values.json);
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
