/**
 * The signatures an instance makes, for /metrics: `topwagers_board_signatures_total` counts the live board
 * versions it signed (one per version, however many viewers asked: boards/wire/parts/board-signatures.ts),
 * `topwagers_race_signatures_total` the live race versions (races/wire/race-events.ts, signed=true).
 * Read when the registry is scraped; nothing about a key is in it.
 */
import type { Registry } from "prom-client";
import { registerCollected } from "../compat/prom-client.js";

export function registerSignatureMetrics(
  registry: Registry,
  boards: { readonly signatures: number },
  races: { readonly signatures: number },
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
}
