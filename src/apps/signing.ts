/**
 * The signing parts an app is built with: the signer every freeze uses (the active key, read from the
 * database, or the key file SIGNING_KEY_FILE when set), the published keys behind the JWKS, and their skin. Keys
 * in the database are sealed at rest by the webhook secrets' box (WEBHOOK_SECRET_KEY), see storage/signing-keys.ts.
 */
import type { Config } from "../config.js";
import { BoardSignatures } from "../handlers/parts/board-signatures.js";
import { VersionSignatures } from "../handlers/parts/version-signatures.js";
import { SigningKeysSkin } from "../handlers/signing-keys.js";
import type { Logger } from "../logger.js";
import { withKeyFile } from "../signing/key-file.js";
import { PublishedKeys } from "../signing/published-keys.js";
import { Signer } from "../signing/signer.js";
import { affiliateExternalIdOf } from "../storage/affiliates.js";
import type { Database } from "../storage/database.js";
import { mariadbSigningKeys } from "../storage/signing-keys.js";
import { WebhookSecretBox } from "../storage/webhook-secrets.js";

export interface Signing {
  readonly signer: Signer;
  /** Live board versions signed once each for the viewers that ask (handlers/parts/board-signatures.ts). */
  readonly boards: BoardSignatures;
  /** Live race versions signed once each for the race stream's viewers that ask (handlers/race-events.ts). */
  readonly races: VersionSignatures;
  readonly published: PublishedKeys;
  readonly skin: SigningKeysSkin;
}

/** How often the "no signing key is active" warning may be logged. */
const NO_KEY_WARNING_EVERY_MS = 60_000;

export function buildSigning(
  config: Pick<Config, "issuer" | "webhooks" | "signingKeyFile">,
  database: Database,
  logger: Logger,
): Signing {
  const inDatabase = mariadbSigningKeys(
    database.write,
    new WebhookSecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys),
  );
  const file = config.signingKeyFile;
  const store =
    file === undefined ? inDatabase : withKeyFile(inDatabase, file.privateKey, Math.floor(Date.now() / 1000));
  let warnedAt = Number.NEGATIVE_INFINITY;
  const signer = new Signer(store, {
    issuer: config.issuer,
    onSigned: (kid) => logger.debug({ kid }, "signed with the active signing key"),
    // A deployment that never made a key freezes its races unsigned: say so, at most once a minute.
    onNoActiveKey: () => {
      if (Date.now() - warnedAt < NO_KEY_WARNING_EVERY_MS) return;
      warnedAt = Date.now();
      logger.warn(
        "no signing key is active: final race results and signed boards go out unsigned (topwagers signing-keys make --activate; docs/verify.md)",
      );
    },
  });
  const published = new PublishedKeys(store, { issuer: config.issuer });
  const boards = new BoardSignatures({
    signer,
    issuer: config.issuer,
    affiliateName: (id) => affiliateExternalIdOf(database.write, id),
  });
  const races = new VersionSignatures({ signer, issuer: config.issuer });
  return { signer, published, skin: new SigningKeysSkin(published, logger), boards, races };
}
