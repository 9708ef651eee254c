/**
 * The results log, built once for a process (docs/verify.md, "The results log"): its store on the primary (every
 * read and the sequencer's transaction; the appends are the freeze's and the cancellation's own, in races/sql), the
 * reader that serves its tiles, checkpoints and inclusion proofs, and the sequencer the server runs
 * (jobs/results-log.ts). The note key is sealed at rest by the webhook secrets' box (WEBHOOK_SECRET_KEY), as the
 * signing keys are. The origin is LOG_ORIGIN, else derived from ISSUER.
 */
import type { Config } from "../platform/config.js";
import type { Database } from "../platform/database/database.js";
import { SecretBox } from "../platform/database/secret-box.js";
import type { Logger } from "../platform/logger.js";
import type { LogStore } from "../ports/results-log.js";
import { originOfIssuer } from "../results-log/core/checkpoint.js";
import { LogReader } from "../results-log/core/log-reader.js";
import { Sequencer } from "../results-log/core/sequencer.js";
import { mariadbLog } from "../results-log/sql/log-store.js";

export interface ResultsLog {
  readonly store: LogStore;
  readonly reader: LogReader;
  readonly sequencer: Sequencer;
  /** The origin a key made now would be named (the key's name, once made, is the log's). */
  readonly origin: string;
}

export function buildResultsLog(
  config: Pick<Config, "issuer" | "logOrigin" | "webhooks">,
  database: Database,
  logger: Logger,
): ResultsLog {
  const origin = config.logOrigin ?? originOfIssuer(config.issuer);
  if (origin === undefined) {
    throw new Error(`ISSUER "${config.issuer}" gives no results log origin (a space or a plus sign): set LOG_ORIGIN`);
  }
  const box = new SecretBox(config.webhooks.secretKey, config.webhooks.previousSecretKeys);
  const store = mariadbLog(database.write, box);
  const sequencer = new Sequencer(store, {
    origin,
    onKeyMade: (verifierKey) =>
      logger.info({ verifierKey }, "made the results log's key (docs/verify.md, The results log)"),
  });
  return { store, reader: new LogReader(store), sequencer, origin };
}
