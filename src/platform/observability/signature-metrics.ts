/**
 * The signatures an instance makes, for /metrics: `topwagers_board_signatures_total` counts the live board
 * versions it signed (one per version, however many viewers asked: boards/wire/parts/board-signatures.ts),
 * `topwagers_race_signatures_total` the live race versions (races/wire/race-events.ts, signed=true), and
 * `topwagers_signing_failing{purpose,reason}` whether each signer's last attempt failed, and why.
 * Read when the registry is scraped; nothing about a key is in it.
 */
import type { Registry } from "prom-client";
import { SIGNING_FAILURES, type SigningFailure } from "../../ports/signing.js";
import { registerCollected } from "../compat/prom-client.js";

/** A signer as the gauge reads it: its key's purpose, and why its last attempt failed. */
interface SignerHealth {
  readonly purpose: string;
  readonly failing: SigningFailure | undefined;
}

export function registerSignatureMetrics(
  registry: Registry,
  boards: { readonly signatures: number },
  races: { readonly signatures: number },
  signers: readonly SignerHealth[] = [],
): void {
  const counters = [
    ["topwagers_board_signatures_total", "Live board versions", boards],
    ["topwagers_race_signatures_total", "Live race versions", races],
  ] as const;
  for (const [name, what, counted] of counters) {
    registerCollected(registry, {
      name,
      help: `${what} this instance signed for callers that asked (signed=true): one per version.`,
      type: "counter",
      values: () => [{ labels: {}, value: counted.signatures }],
    });
  }
  registerCollected(registry, {
    name: "topwagers_signing_failing",
    help:
      "1 while this instance's last attempt to sign with the purpose's key (result, live, log) failed, or its active " +
      "key does not open here, for the reason (key_read_failed: the active key could not be read; key_unopenable: " +
      "it was sealed under another WEBHOOK_SECRET_KEY, or none is set here), 0 otherwise.",
    type: "gauge",
    values: () =>
      signers.flatMap(({ purpose, failing }) =>
        SIGNING_FAILURES.map((reason) => ({ labels: { purpose, reason }, value: failing === reason ? 1 : 0 })),
      ),
  });
}
