/**
 * The signatures an instance makes, for /metrics: `topwagers_board_signatures_total` counts the live board
 * versions it signed (one per version, however many viewers asked: handlers/parts/board-signatures.ts).
 * Read when the registry is scraped; nothing about a key is in it.
 */
import type { Registry } from "prom-client";
import { registerCollected } from "../compat/prom-client.js";

export function registerSignatureMetrics(registry: Registry, boards: { readonly signatures: number }): void {
  registerCollected(registry, {
    name: "topwagers_board_signatures_total",
    help: "Live board versions this instance signed for callers that asked (signed=true): one per version.",
    type: "counter",
    values: () => [{ labels: {}, value: boards.signatures }],
  });
}
