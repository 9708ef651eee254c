/**
 * The signing parts an app is built with: the signer every freeze uses (the active key, read from the
 * database), the published keys behind the JWKS, and their skin. Keys are sealed at rest by the webhook
 * secrets' box (WEBHOOK_SECRET_KEY), see storage/signing-keys.ts.
 */
import type { Config } from "../config.js";
import { BoardSignatures } from "../handlers/parts/board-signatures.js";
import { SigningKeysSkin } from "../handlers/signing-keys.js";
import type { Logger } from "../logger.js";
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
  readonly published: PublishedKeys;
  readonly skin: SigningKeysSkin;
}

export function buildSigning(config: Pick<Config, "issuer" | "webhooks">, database: Database, logger: Logger): Signing {
  const store = mariadbSigningKeys(
    database.write,
    new WebhookSecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys),
  );
  const signer = new Signer(store, {
    issuer: config.issuer,
    onSigned: (kid) => logger.debug({ kid }, "signed with the active signing key"),
  });
  const published = new PublishedKeys(store, { issuer: config.issuer });
  const boards = new BoardSignatures({
    signer,
    issuer: config.issuer,
    affiliateName: (id) => affiliateExternalIdOf(database.write, id),
  });
  return { signer, published, skin: new SigningKeysSkin(published, logger), boards };
}
