/**
 * Whether this instance can open the active key of every sealed kind (issue 47, item 4: signing/sql/sealed-keys.ts,
 * the results', the live and the results log's keys), checked at most every CHECK_EVERY_MS when readiness or a scrape
 * asks. A key that does not open (sealed under another WEBHOOK_SECRET_KEY, or none set here) is logged once at error
 * level with the real cause and what stops (and once at info when it opens again), is named in `/readyz` (ready for
 * reads, not for signing: platform/observability/readiness.ts) and sets `topwagers_signing_failing{purpose,
 * reason="key_unopenable"}`.
 */
import type { Database } from "../platform/database/database.js";
import type { SecretBox } from "../platform/database/secret-box.js";
import type { Logger } from "../platform/logger.js";
import type { SigningFailure } from "../ports/signing.js";
import { type SealedKeyPurpose, type UnopenedKey, unopenedActiveKeys } from "../signing/sql/sealed-keys.js";

const CHECK_EVERY_MS = 10_000;

/** What stops while a purpose's active key does not open. */
const WHAT_STOPS: Readonly<Record<SealedKeyPurpose, string>> = {
  result: "races due to be frozen wait (their history says so); boards and races are still served",
  live: "live versions cannot be signed; boards and races are still served",
  log: "the results log signs no new checkpoint; results are still logged and served",
};

export class SealedKeysHealth {
  private last: readonly UnopenedKey[] = [];
  private checkedAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<readonly UnopenedKey[]> | undefined;

  constructor(
    private readonly database: Database,
    private readonly box: SecretBox,
    private readonly logger: Logger,
    /** Purposes whose key is not the database's (the result key with SIGNING_KEY_FILE). */
    private readonly skip: readonly SealedKeyPurpose[] = [],
  ) {}

  /** The active keys this instance cannot open, as last checked (read again when CHECK_EVERY_MS old). */
  async check(): Promise<readonly UnopenedKey[]> {
    if (Date.now() - this.checkedAt < CHECK_EVERY_MS) return this.last;
    this.checking ??= unopenedActiveKeys(this.database.read, this.box, this.skip)
      .then((found) => {
        this.report(found);
        this.last = found;
        this.checkedAt = Date.now();
        return found;
      })
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  /** key_unopenable while the purpose's active key did not open at the last check. */
  failing(purpose: SealedKeyPurpose): SigningFailure | undefined {
    return this.last.some((key) => key.purpose === purpose) ? "key_unopenable" : undefined;
  }

  private report(found: readonly UnopenedKey[]): void {
    const named = (key: UnopenedKey) => `${key.purpose}:${key.id}`;
    const before = new Set(this.last.map(named));
    const now = new Set(found.map(named));
    for (const key of found) {
      if (before.has(named(key))) continue;
      this.logger.error(
        { purpose: key.purpose, kid: key.id, reason: key.reason },
        `the active ${key.purpose} key ${key.id} cannot be opened on this instance: ${key.message}. Until it opens, ${WHAT_STOPS[key.purpose]}`,
      );
    }
    for (const key of this.last) {
      if (!now.has(named(key)))
        this.logger.info({ purpose: key.purpose, kid: key.id }, `the active ${key.purpose} key ${key.id} opens again`);
    }
  }
}
