/**
 * What the race tests share: Races on a test database as an instance runs them, an endpoint subscribed to
 * every race event, an outcome's value, a view's entries as a table, and the digest rebuilt from an answer
 * alone by the recipe docs/api.md documents (a wagered race), independently of src/races/core/digest.ts.
 */

import { createHash } from "node:crypto";
import type { Pool } from "mysql2/promise";
import { boardStandings } from "../../src/boards/core/board-standings.js";
import { Leaderboard } from "../../src/boards/core/leaderboard.js";
import { causalStandings, mariadbStandings } from "../../src/boards/sql/standings-store.js";
import type { Database } from "../../src/platform/database/database.js";
import { SecretBox } from "../../src/platform/database/secret-box.js";
import type { PayloadSigner } from "../../src/ports/signing.js";
import type { RaceDefinitionFields } from "../../src/races/core/race-rules.js";
import { newRaces, type Races, type RaceView } from "../../src/races/core/races.js";
import { mariadbRaces } from "../../src/races/sql/race-store.js";
import type { WebhookEventType } from "../../src/values/webhook-events.js";
import { MariadbWebhookStore } from "../../src/webhooks/sql/webhooks.js";

export interface InstanceRaces {
  /** The instance's clock (Unix seconds), which the test moves. */
  readonly now: () => number;
  /** Where its boards are read: `db.read` unless given (`db.leaderboard` where replicas serve boards). */
  readonly boards?: Pool;
  /** The default avatar; "" unless given. */
  readonly avatar?: string;
  /** The freeze's reads: causal on the primary, as serve builds them, unless "primary" (the write pool as it is). */
  readonly freeze?: "causal" | "primary";
  /** Signs each final result at the freeze (src/signing/core/signer.ts); unsigned unless given. */
  readonly signer?: PayloadSigner;
  /** How many due races one tick handles at once (1 unless given, as the server's clock). */
  readonly tickConcurrency?: number;
}

/** One instance's Races on `db`: its own leaderboard without a cache over the boards' pool, as a process has. */
export function instanceRaces(db: Database, options: InstanceRaces): Races {
  const boards = options.boards ?? db.read;
  const avatar = options.avatar ?? "";
  return newRaces({
    store: mariadbRaces(db.write),
    standings: boardStandings(
      new Leaderboard({
        standings: mariadbStandings(boards),
        defaultAvatarUrl: avatar,
        cacheTtlMs: 0,
        now: options.now,
      }),
      mariadbStandings(boards),
    ),
    freezeStandings: options.freeze === "primary" ? mariadbStandings(db.write) : causalStandings(db.write, db.flavour),
    defaultAvatarUrl: avatar,
    now: options.now,
    ...(options.signer === undefined ? {} : { signer: options.signer }),
    ...(options.tickConcurrency === undefined ? {} : { tickConcurrency: options.tickConcurrency }),
  });
}

/** Every race event type: what an endpoint subscribed to a race's whole life lists. */
export const RACE_EVENT_TYPES: readonly WebhookEventType[] = [
  "race.started",
  "race.ended",
  "race.finalized",
  "race.cancelled",
];

/** An endpoint of the affiliate subscribed to every race event: each state change writes its event in the outbox. */
export async function subscribeToRaceEvents(write: Pool, id: string, affiliateExternalId: string): Promise<void> {
  await new MariadbWebhookStore(write, new SecretBox(undefined)).insertEndpoint({
    id,
    affiliateExternalId,
    url: "https://hooks.example.com/races",
    description: "",
    eventTypes: RACE_EVENT_TYPES,
    secret: "whsec_dGVzdC1zZWNyZXQtdGVzdC1zZWNyZXQ=",
  });
}

/**
 * What Races.create takes: a race's slug, title and first period (`[start]` alone for a series whose end the rules
 * compute), then the rest of its definition.
 */
export function raceNamed(
  slug: string,
  title: string,
  [start, end]: readonly [number, number?],
  rest: RaceDefinitionFields = {},
): RaceDefinitionFields {
  return { slug, title, startTimestamp: start, ...(end === undefined ? {} : { endTimestamp: end }), ...rest };
}

/** The value of an ok outcome; anything else fails the test with the outcome. */
export function ok<T>(outcome: { kind: string; value?: T }): T {
  if (outcome.kind !== "ok") throw new Error(`expected ok, got ${JSON.stringify(outcome)}`);
  return outcome.value as T;
}

/** A race's JSON entries (REST, the CLI's --json) as [rank, username, prize]. */
export function prizeRows(entries: unknown): [number, string, string][] {
  return (entries as { rank: number; username: string; prize: string }[]).map((e) => [e.rank, e.username, e.prize]);
}

/** The entries as [rank, username, total, prize]. */
export function raceTable(view: RaceView): [number, string, string, string][] {
  return view.entries.map((e) => [e.rank, e.username, e.totalWagered, e.prize]);
}

/** The digest by the documented recipe, built from the answer alone (a wagered race: `weighted` is null). */
export function recomputedDigest(view: RaceView): string {
  const canonical = (text: string) =>
    text
      .replace(/^(-?)0+(?=\d)/, "$1")
      .replace(/(\.\d*?)0+$/, "$1")
      .replace(/\.$/, "");
  const text =
    `{"raceId":${JSON.stringify(view.race.id)},"slug":${JSON.stringify(view.race.slug)},` +
    `"startTimestamp":${view.race.startTimestamp},"endTimestamp":${view.race.endTimestamp},` +
    `"rankBy":"${view.race.rankBy}","currency":${JSON.stringify(view.race.currency)},"entries":[` +
    view.entries
      .map(
        (e) =>
          `{"rank":${e.rank},"username":${JSON.stringify(e.username)},"wagered":"${canonical(e.totalWagered)}",` +
          `"weighted":null,"prize":"${canonical(e.prize)}"}`,
      )
      .join(",") +
    `],"unallocated":"${canonical(view.unallocated)}"}`;
  return createHash("sha256").update(text, "utf8").digest("hex");
}
