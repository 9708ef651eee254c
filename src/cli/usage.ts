/**
 * The usage text of every command and subcommand, in one table. `--help` (or
 * `-h`) anywhere on a command line prints the entry of the longest matching
 * command path and exits 0 before anything else runs (no settings read, no
 * database touched); a usage error prints the same entry after the error.
 * A new command or subcommand only needs a row here.
 */

export interface CommandUsage {
  /** The arguments after the command path, e.g. `<keyId> [--json]`. */
  readonly synopsis: string;
  /** One or more lines saying what it does. */
  readonly summary: string;
  /** Extra lines (options, exit codes); printed by `--help` only. */
  readonly details?: string;
}

export const PROGRAM = "topwagers";

/**
 * How a hint spells a command to run next: `topwagers` when this is an installed package (its files under a
 * node_modules folder), `npm run cli --` in a checkout, where `topwagers` is not on the PATH.
 */
export const RUN = new URL(import.meta.url).pathname.includes("/node_modules/") ? PROGRAM : "npm run cli --";

export const COMMANDS: Readonly<Record<string, CommandUsage>> = {
  serve: {
    synopsis: "",
    summary: "run the server with the settings from the environment (the image's default command)",
    details:
      "  Listens on HOST:PORT (public: REST, Connect, gRPC, gRPC-Web) and INTERNAL_HOST:INTERNAL_PORT\n" +
      "  (ingest, keys, /metrics), applies pending migrations first unless MIGRATE_ON_START=false, and\n" +
      "  logs JSON lines on stderr. SIGTERM or SIGINT: finishes in-flight requests and exits 0.\n" +
      "  Exit 2: a setting is wrong (every problem is listed); exit 1: it could not start.\n" +
      "  `node dist/src/main.js` is the same command.",
  },
  migrate: {
    synopsis: "[--status] [--json]",
    summary: "apply pending schema migrations (--status: list applied and pending ones, apply nothing)",
    details:
      "  --status   list applied and pending migrations without applying any (nor creating the database);\n" +
      "             exit 1 while any is pending, 0 when the schema is current\n" +
      "  --json     print one JSON document on stdout instead of text",
  },
  instances: {
    synopsis: "[--json]",
    summary:
      "list the live instances registered with this database, and the connections of clients that did not register " +
      "(an older release); exit 1 while one is open",
    details:
      "  --json  print one JSON document {database, instances, unregisteredConnections} on stdout\n" +
      "  Retention prunes nothing while such a connection is open (docs/operations.md, Version safety). The\n" +
      "  connections of this command's database user are seen, all of them with the PROCESS privilege.",
  },
  "keys create": {
    synopsis:
      "--affiliate <affiliateId> [--label <text>] [--rate-limit <points>/<seconds>s] [--expires-in <duration>] " +
      "[--publishable [--origin <origin>...]] [--rank-by wagered|weighted] [--scope <scope>...] [--json]",
    summary: "create an API key for an affiliate; the key is printed once, only its hash is stored",
    details:
      "  --affiliate    the platform's affiliate id whose wagers the key reads (required; 1 to 64 characters)\n" +
      "  --label        a note for people, e.g. the affiliate's site (up to 200 characters)\n" +
      "  --rate-limit   the key's own limit, e.g. 120/60s (default: RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_S)\n" +
      "  --expires-in   the key stops working after this long: a number with s, m, h, d or w (e.g. 90d)\n" +
      "  --publishable  a browser-safe key (tw_pub_...) for a public page or the OBS overlay: may go in ?key=\n" +
      "                 on the GET paths, counted per key and client address; without --origin it is for the\n" +
      "                 overlay ({BASE_PATH}/board) only, no other site's page can read with it\n" +
      "  --origin       an origin whose pages may read with the publishable key (CORS), e.g.\n" +
      "                 https://board.example.com (scheme, host, optional port; repeat for several)\n" +
      "  --rank-by      how the key's boards rank when a request does not say: weighted gives weighted\n" +
      "                 boards (race rules) to a site that cannot change its requests; its rankBy still wins\n" +
      "  --scope        restrict the key to this scope; repeat for several: boards:read, races:read, races:write,\n" +
      "                 webhooks:write (default: every scope; a publishable key: boards:read and races:read,\n" +
      "                 never a write scope)\n" +
      "  --json         print one JSON document {id, key, affiliateId, ...} on stdout\n" +
      "Warns on stderr when no user of the affiliate is known yet (the key is still created).",
  },
  "keys rotate": {
    synopsis: "<keyId> [--overlap <duration>] [--json]",
    summary:
      "a new key for the same affiliate, label, limit, kind and scopes; the old one works for --overlap more (default 0s)",
    details: "  --overlap  how long the old key keeps working: a number with s, m, h, d or w, at most 30d",
  },
  "keys list": {
    synopsis: "[--json]",
    summary:
      "list keys (ids, affiliates, kind, status, rate limits, default ranking, expiry, origins, and the scopes of " +
      "restricted keys); never prints a key",
    details: "  --json  print one JSON document (an array of keys) on stdout",
  },
  "keys revoke": {
    synopsis: "<keyId>",
    summary: "revoke a key; running servers refuse it within 1 second",
  },
  "keys set-rate-limit": {
    synopsis: "<keyId> <points>/<seconds>s|default",
    summary: "set a key's own rate limit, or go back to the default",
  },
  "keys set-rank-by": {
    synopsis: "<keyId> wagered|weighted|default",
    summary: "set how a key's boards rank when a request does not say (default: no default, total wagered)",
  },
  "races create": {
    synopsis:
      "--affiliate <affiliateId> --slug <slug> --title <text> --start <time> [--end <time>] [--prize <amount>...] " +
      "[--currency USD] [--min-wagered <amount>] [--exclude <userId>...] [--review <duration>] [--shown <n>] " +
      "[--repeat none|daily|weekly|monthly] [--time-zone <IANA zone>] [--rank-by wagered|weighted] [--allow-past] " +
      "[--json]",
    summary: "define a race (or a recurring series) for an affiliate; the servers' clock starts, ends and freezes it",
    details:
      "  --affiliate    the platform's affiliate id that owns the race (required)\n" +
      "  --slug         unique among the affiliate's races, e.g. monthly (a-z, 0-9 and -, up to 64)\n" +
      "  --title        shown above the board (up to 120 characters)\n" +
      "  --start        the first second that counts: Unix seconds or ISO 8601 (2026-12-01, 2026-12-01T00:00Z);\n" +
      "                 without an offset it is read in --time-zone (default UTC)\n" +
      "  --end          the last second that counts, inclusive (required without --repeat; with it, computed);\n" +
      "                 a date alone is that whole day: --end 2026-12-31 ends at 23:59:59 in the race's zone\n" +
      "  --prize        the prize of rank 1, 2, ... in order, a decimal amount (repeat for each rank, up to 100)\n" +
      "  --currency     a label for the prizes' unit, e.g. USD (default USD)\n" +
      "  --min-wagered  the least total a user needs to be placed (default 0)\n" +
      "  --exclude      a user id never shown nor placed (staff, the streamer's own accounts; repeatable)\n" +
      "  --review       how long standings still follow voids before the freeze: seconds or 90m, 1d (default 1d)\n" +
      "  --shown        entries shown, 1 to 100 (default the number of prizes, 10 without prizes)\n" +
      "  --repeat       a new race every day, week or month after the first, counted in --time-zone\n" +
      "  --time-zone    the IANA zone of a series' days and months, e.g. America/New_York (default UTC)\n" +
      "  --rank-by      wagered (default) or weighted totals\n" +
      "  --allow-past   make a race whose end has already passed (refused without it: a typo in the year)\n" +
      "  --json         print the race as GET {BASE_PATH}/races/{id} shows it\n" +
      "Times are printed in UTC and in the race's zone. Exit 2 names every option at fault; exit 1 when the slug\n" +
      "is held by another series (a cancelled series' slug is free again).",
  },
  "races list": {
    synopsis:
      "--affiliate <affiliateId> [--state scheduled|live|reviewing|final|cancelled...] [--slug <slug>] [--json]",
    summary: "list an affiliate's races, newest start first (ids, slugs, states, periods, prizes)",
    details: "  --state  only races in this state (repeatable)\n  --json   print one JSON array of races",
  },
  "races show": {
    synopsis: "<raceId|slug> --affiliate <affiliateId> [--json]",
    summary: "a race with its standings (a series' current race by its slug); the frozen result and digest once final",
    details: "  --json  print the race as GET {BASE_PATH}/races/{slug} shows it",
  },
  "races cancel": {
    synopsis: "<raceId|slug> --affiliate <affiliateId> [--json]",
    summary: "cancel a race that is not final (a series then creates no further race); again changes nothing",
  },
  "races update": {
    synopsis:
      "<raceId|slug> --affiliate <affiliateId> [--title <text>] [--start <time>] [--end <time>] " +
      "[--prize <amount>...|--no-prizes] [--currency USD] [--min-wagered <amount>] [--exclude <userId>...|--no-excluded] " +
      "[--review <duration>] [--shown <n>] [--rank-by wagered|weighted] [--this-race] [--json]",
    summary: "change a race's rules and prizes until it ends, its period while it is scheduled",
    details:
      "  Only the options given change. Times without an offset are read in the race's zone; a date alone is\n" +
      "  its first second as --start and its last (23:59:59) as --end.\n" +
      "  --prize        replaces the whole prize table (repeat for each rank); --no-prizes empties it\n" +
      "  --exclude      replaces the excluded users (repeatable); --no-excluded empties them\n" +
      "  --this-race    change this race only: without it the series' next race, when it exists and is\n" +
      "                 scheduled, gets the same change (its period excepted)",
  },
  "races delete": {
    synopsis: "<raceId|slug> --affiliate <affiliateId> [--json]",
    summary: "delete a race nobody has seen yet (scheduled, the first of its series); its slug is free again",
  },
  "webhooks create": {
    synopsis: "--affiliate <affiliateId> --url <https URL> --event <type>... [--description <text>] [--json]",
    summary: "add a webhook endpoint for an affiliate and print its signing secret (shown this once)",
    details:
      "  --event        race.started, race.ended, race.finalized, race.cancelled or webhook.test; repeat for several\n" +
      "  --url          https only, resolving to public addresses (WEBHOOK_ALLOW_PRIVATE_URLS=true lifts this)\n" +
      "  --json         print the endpoint and its secret as one JSON document",
  },
  "webhooks list": {
    synopsis: "[--affiliate <affiliateId>] [--json]",
    summary: "list webhook endpoints (ids, affiliates, enabled or why disabled, events, URLs); never a secret",
  },
  "webhooks test": {
    synopsis: "<endpointId> [--json]",
    summary: "queue a webhook.test event to an endpoint; a running server sends it",
  },
  "webhooks deliveries": {
    synopsis: "<endpointId> [--page-size 20] [--page-token <token>] [--json]",
    summary: "an endpoint's deliveries, newest first: event, state, attempts, last status or error, next attempt",
    details: "  --json  print the page with every attempt of each delivery",
  },
  "webhooks redeliver": {
    synopsis: "<deliveryId> [--json]",
    summary: "send one delivery again with the same webhook-id (one more attempt); a running server sends it",
  },
  "signing-keys make": {
    synopsis: "[--live] [--activate] [--json]",
    summary: "make an Ed25519 key that signs final race results; it is published at once (JWKS), signs once active",
    details:
      "  --live      a live key instead: it signs live races and boards, never a result (jwks-live.json)\n" +
      "  --activate  make it the active key now (the key active before is retired and stays published)\n" +
      "  The private key is sealed with WEBHOOK_SECRET_KEY at rest and never printed (docs/verify.md).",
  },
  "signing-keys list": {
    synopsis: "[--json]",
    summary: "list the signing keys (result or live, kid, new, active or retired, when); never a private key",
  },
  "signing-keys activate": {
    synopsis: "<kid>",
    summary: "make a key the one every server signs with (within a few seconds); the one before is retired",
  },
  "signing-keys retire": {
    synopsis: "<kid>",
    summary: "retire a key that is not active: it never signs, and stays published so its signatures verify",
  },
  import: {
    synopsis: "<file> [--format jsonl|csv] [--json]",
    summary: "import users, wagers and voids from JSON Lines or CSV, through ingest (see README)",
    details:
      "  --format   jsonl or csv (default: from the file name, else the first line)\n" +
      "  --json     print the report as one JSON document on stdout\n" +
      "Exit 1 when a line was refused (each is reported on stderr).",
  },
  seed: {
    synopsis:
      "[--seed 42] [--affiliates 2000] [--users <n>] [--wagers 1000000] [--months 12] " +
      "[--end <unixSeconds>] [--prefix <text>] [--method auto|record|bulk] [--void-per-mille 0] [--json]",
    summary: "deterministic synthetic users and wagers (the same options give the same data)",
    details:
      "  --months          the window's length in calendar months, ending at --end; it never starts before\n" +
      "                    1733115600 (2 December 2024), the earliest time ingest accepts\n" +
      "  --void-per-mille  void this many wagers in a thousand (0-1000), chosen by seed, after writing them\n" +
      "  --json            print the report as one JSON document on stdout",
  },
  verify: {
    synopsis: "[--max-report 100] [--json]",
    summary: "recompute every rollup from the raw wagers; exit 1 on a mismatch",
  },
  "log verify": {
    synopsis: "[--max-report 100] [--json]",
    summary: "check the whole results log against itself and the races; exit 1 on a problem (docs/verify.md)",
    details:
      "  Reads every entry: each at its index once, its leaf hash, each tile hash, each checkpoint's signature\n" +
      "  (the log's key) and root; then every race final, or cancelled after its start, since the log began must\n" +
      "  be logged with exactly its entry, and nothing else. Needs no WEBHOOK_SECRET_KEY. Progress on stderr.\n" +
      "  --max-report  list at most this many problems (all are counted)\n" +
      "  --json        print the report as one JSON document on stdout\n" +
      "  Exit 0: the log holds; 1: a problem, each printed; 2: the command line is wrong.",
  },
  demo: {
    synopsis: "[--port <port>]",
    summary: "load demo data, create a demo key, and serve",
  },
};

const FOOTER =
  "Settings come from the environment (DATABASE_URL, PORT, ...; see README).\n" +
  `From a checkout, \`npm run cli -- <command>\` is the same as \`${PROGRAM} <command>\`.`;

/** `topwagers <path> <synopsis>`, without a trailing space when the command takes nothing. */
function invocation(path: string, usage: CommandUsage): string {
  return [PROGRAM, path, usage.synopsis].filter((part) => part !== "").join(" ");
}

function line(path: string, usage: CommandUsage): string {
  return `  ${invocation(path, usage)}\n      ${usage.summary}`;
}

/** The whole program's usage. */
export function programUsage(): string {
  const lines = Object.entries(COMMANDS).map(([path, usage]) => line(path, usage));
  return (
    `usage: ${PROGRAM} <command> [options]\n\n${lines.join("\n")}\n` +
    `  ${PROGRAM} --version\n  ${PROGRAM} <command> --help\n\n${FOOTER}`
  );
}

/** The usage of the longest command path `args` starts with; the program's when none matches. */
export function usageFor(args: readonly string[]): string {
  const words = args.filter((a) => !a.startsWith("-"));
  for (let n = Math.min(words.length, 2); n >= 1; n -= 1) {
    const path = words.slice(0, n).join(" ");
    const exact = COMMANDS[path];
    if (exact !== undefined) {
      return `usage: ${invocation(path, exact)}\n\n${exact.summary}\n${exact.details === undefined ? "" : `\n${exact.details}\n`}\n${FOOTER}`;
    }
    const group = Object.entries(COMMANDS).filter(([p]) => p.startsWith(`${path} `));
    if (group.length > 0) {
      return `usage: ${PROGRAM} ${path} <subcommand>\n\n${group.map(([p, u]) => line(p, u)).join("\n")}\n\n${FOOTER}`;
    }
  }
  return programUsage();
}

/** Whether the command line asks for help: `--help` or `-h` before any `--`. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (arg === "--help" || arg === "-h") return true;
  }
  return false;
}
