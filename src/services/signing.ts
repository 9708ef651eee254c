/**
 * Signing, built once for a process: the signer every freeze uses (the active result key, read from the database,
 * or the key file SIGNING_KEY_FILE when set), the live signer of live races and boards (the live key,
 * made once for the fleet when signing is on and there is none: signing/core/live-key.ts), the published keys of
 * each behind their JWK Sets, and their skin. Keys in the database are sealed at rest by the secret box
 * (WEBHOOK_SECRET_KEY), see signing/sql/signing-keys.ts. Servers sign by default: the first to start with no active
 * result key makes one for the fleet (`makeFirstResultKey`); with SIGNING=off nothing is signed (the keys made before
 * stay published) and no key is made.
 */

import { BoardSignatures } from "../boards/wire/parts/board-signatures.js";
import { affiliateExternalIdOf } from "../ingest/sql/affiliates.js";
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { SecretBox } from "../platform/database/secret-box.js";
import type { Logger } from "../platform/logger.js";
import type { SigningKeyStore } from "../ports/signing.js";
import { withKeyFile } from "../signing/core/key-file.js";
import { ensureActiveKey } from "../signing/core/keys.js";
import { liveKeyMadeOnce } from "../signing/core/live-key.js";
import { PublishedKeys } from "../signing/core/published-keys.js";
import { Signer } from "../signing/core/signer.js";
import { VersionSignatures } from "../signing/core/version-signatures.js";
import { mariadbSigningKeys } from "../signing/sql/signing-keys.js";
import { SigningKeysSkin } from "../signing/wire/signing-keys.js";
import { SealedKeysHealth } from "./sealed-keys-health.js";

export interface Signing {
  /** Signs final results with the result key (the freeze). */
  readonly signer: Signer;
  /** Signs live race versions and live boards with the live key, never a result. */
  readonly liveSigner: Signer;
  /** Live board versions signed once each for the viewers that ask (boards/wire/parts/board-signatures.ts). */
  readonly boards: BoardSignatures;
  /** Live race versions signed once each for the race stream's viewers that ask (races/wire/race-events.ts). */
  readonly races: VersionSignatures;
  readonly published: PublishedKeys;
  readonly publishedLive: PublishedKeys;
  readonly skin: SigningKeysSkin;
  /** Whether this instance can open the active key of every sealed kind (readiness, the signing gauge, the log). */
  readonly health: SealedKeysHealth;
}

/** How often the "no signing key is active" warning may be logged. */
const NO_KEY_WARNING_EVERY_MS = 60_000;

type SigningConfig = Pick<Config, "issuer" | "webhooks" | "signingKeyFile" | "signing">;

export function buildSigning(
  config: SigningConfig,
  database: Database,
  logger: Logger,
  logVerifierKey?: () => Promise<string | undefined>,
): Signing {
  const box = secretBox(config);
  const store = resultKeys(config, database, box);
  const warnNoKey = noKeyWarning(config, logger);
  const signer = signerOfResults(config, store, logger, warnNoKey);
  const liveKeys = mariadbSigningKeys(database.write, box, "live");
  const liveKey = liveKeyMadeOnce(liveKeys, {
    signingOn: () => signer.isOn(),
    onMade: (kid) => logger.info({ kid }, "made and activated the live signing key (docs/verify.md, The live key)"),
  });
  const liveSigner = new Signer(config.signing === "off" ? NO_KEY : liveKey, {
    issuer: config.issuer,
    purpose: "live",
    onSigned: (kid) => logger.debug({ kid }, "signed with the active live signing key"),
    onNoActiveKey: warnNoKey,
  });
  const published = new PublishedKeys(store, { issuer: config.issuer });
  const publishedLive = new PublishedKeys(liveKeys, { issuer: config.issuer });
  const boards = new BoardSignatures({
    signer: liveSigner,
    issuer: config.issuer,
    affiliateName: (id) => affiliateExternalIdOf(database.write, id),
  });
  const races = new VersionSignatures({ signer: liveSigner, issuer: config.issuer });
  const skin = new SigningKeysSkin(published, publishedLive, logger, logVerifierKey);
  const health = new SealedKeysHealth(database, box, logger, config.signingKeyFile === undefined ? [] : ["result"]);
  return { signer, liveSigner, published, publishedLive, skin, boards, races, health };
}

/**
 * The signer of final results alone, for what freezes or may freeze a race without serving the rest of signing
 * (the internal listener on its own, the CLI, the demo): the same key (the database's active result key, or
 * SIGNING_KEY_FILE) as buildSigning's `signer`.
 */
export function resultSigner(config: SigningConfig, database: Database, logger: Logger): Signer {
  return signerOfResults(config, resultKeys(config, database, secretBox(config)), logger, noKeyWarning(config, logger));
}

/**
 * Servers sign by default: at a server's start with SIGNING on, no SIGNING_KEY_FILE and no active result key, makes
 * and activates one, once for the fleet (instances starting together: one key goes in, the others find it), sealed
 * with this instance's WEBHOOK_SECRET_KEY; the instance that made it logs it (its id, never the key). A key that is
 * active but cannot be opened is not replaced: the instance reports it (sealed-keys-health.ts).
 */
export async function makeFirstResultKey(config: SigningConfig, database: Database, logger: Logger): Promise<void> {
  if (config.signing === "off") {
    logger.info("signing is off (SIGNING=off): final results and live versions go out unsigned (docs/verify.md)");
    return;
  }
  if (config.signingKeyFile !== undefined) return;
  const store = mariadbSigningKeys(database.write, secretBox(config), "result");
  const { kid, made } = await ensureActiveKey(store, Math.floor(Date.now() / 1000));
  if (made) {
    logger.info(
      { kid },
      "made and activated the result signing key: none was active (docs/verify.md; SIGNING=off to sign nothing)",
    );
  }
}

/** What a signer reads with SIGNING=off: no key is ever active. */
const NO_KEY: Pick<SigningKeyStore, "active"> = { active: async () => undefined };

function secretBox(config: Pick<Config, "webhooks">): SecretBox {
  return new SecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys);
}

/** The result keys: the database's, or the key file's in front of them when SIGNING_KEY_FILE is set. */
function resultKeys(config: Pick<Config, "signingKeyFile">, database: Database, box: SecretBox): SigningKeyStore {
  const inDatabase = mariadbSigningKeys(database.write, box, "result");
  const file = config.signingKeyFile;
  return file === undefined ? inDatabase : withKeyFile(inDatabase, file.privateKey, Math.floor(Date.now() / 1000));
}

function signerOfResults(
  config: Pick<Config, "issuer" | "signing">,
  store: SigningKeyStore,
  logger: Logger,
  onNoActiveKey: () => void,
): Signer {
  return new Signer(config.signing === "off" ? NO_KEY : store, {
    issuer: config.issuer,
    onSigned: (kid) => logger.debug({ kid }, "signed with the active signing key"),
    onNoActiveKey,
  });
}

/**
 * A deployment with no active key freezes its races unsigned: say so, at most once a minute (not when SIGNING=off
 * asks for it).
 */
function noKeyWarning(config: Pick<Config, "signing">, logger: Logger): () => void {
  let warnedAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (config.signing === "off") return;
    if (Date.now() - warnedAt < NO_KEY_WARNING_EVERY_MS) return;
    warnedAt = Date.now();
    logger.warn(
      "no signing key is active: final race results and signed boards go out unsigned (topwagers signing-keys make --activate; docs/verify.md)",
    );
  };
}
