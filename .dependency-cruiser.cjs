// The house rules of docs/architecture.md, held by `npm run lint`. src/ is cut by feature (boards, races, webhooks,
// keys, ingest, signing, results-log), each with its layers inside: core/ (the rules, pure), sql/ (its storage),
// wire/ (its skins and codecs); shared infrastructure lives in platform/, the shared words in values/ and ports/.
// A rule names the layer it protects; an exception names the file, why, and what would remove it.

/** The feature folders. */
const FEATURES = "boards|races|webhooks|keys|ingest|signing|results-log";
/** Driver and wire libraries a core never imports. */
const IO_LIBRARIES =
  "node_modules/(@connectrpc|@bufbuild|mysql2|ioredis|rate-limiter-flexible|prom-client|@opentelemetry|pino)/";

/** What a sql/ may import: the database folder, the shared words, its own feature and the ledger (ingest/sql/). */
const SQL_MAY = "^src/(ports|values|platform/database)/|^src/$1/(core|sql)/|^src/ingest/sql/";
const SQL_MAY_NOT = "^src/|^gen/|node_modules/(@connectrpc|@bufbuild|ioredis)/";

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "Import cycles hide the order of initialisation and the direction of the layers.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "core-imports-ports-and-values",
      comment:
        "A feature's core/ is its rules as plain code: it imports ports/, values/ and its own core/, luxon, jose and " +
        "node: modules; never a driver, Connect, the generated messages, platform/, another feature or a layer above. " +
        "It returns values or throws its own errors (values/domain-errors.ts), which platform/errors/ maps.",
      severity: "error",
      from: { path: `^src/(${FEATURES})/core/` },
      to: {
        path: `^src/|^gen/|${IO_LIBRARIES}`,
        pathNot: "^src/(ports|values)/|^src/$1/core/|^src/platform/logger[.]ts$",
      },
    },
    {
      name: "core-takes-a-logger-it-is-handed",
      comment: "A core may name the Logger type of the logger it is handed (platform/logger.ts), never make one.",
      severity: "error",
      from: { path: `^src/(${FEATURES})/core/` },
      to: { path: "^src/platform/logger[.]ts$", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "ports-are-interfaces",
      comment:
        "src/ports/ holds only the interfaces the services take (and their types): it imports values/ and " +
        "nothing else, so a port never drags an adapter or a core along.",
      severity: "error",
      from: { path: "^src/ports/" },
      to: { path: "^src/|node_modules/", pathNot: "^src/(ports|values)/" },
    },
    {
      name: "values-import-nothing",
      comment: "values/ is the vocabulary every layer shares: it imports nothing of ours outside itself.",
      severity: "error",
      from: { path: "^src/values/" },
      to: { path: "^src/", pathNot: "^src/values/" },
    },
    {
      name: "sql-reads-the-database-folder",
      comment:
        "A feature's sql/ is its statements: it imports platform/database/, ports/, values/, its own feature and " +
        "ingest/sql/ (the ledger: wagers, users, affiliates, rollups, change rows, retention horizons, which every " +
        "feature's statements read or write beside their own tables); never another feature's sql/, Connect or a " +
        "layer above. The named exceptions follow.",
      severity: "error",
      from: {
        path: `^src/(${FEATURES})/sql/`,
        pathNot: "^src/races/sql/(race-events|race-history|race-steps|races)[.]ts$",
      },
      to: {
        path: SQL_MAY_NOT,
        pathNot: [
          SQL_MAY,
          // The late wagers and voids a recording notes against races run in the recording's own transaction
          // (noteLateRaceWagers, noteRaceVoids). Goes when the recording takes its race notes as a hook.
          "^src/races/sql/race-history[.]ts$",
        ].join("|"),
      },
    },
    {
      name: "race-steps-write-the-outbox",
      comment:
        "A race's step writes its webhook events to the outbox in the step's own transaction, so an event is owed " +
        "exactly when the step happened. Goes when the step takes the outbox as a port.",
      severity: "error",
      from: { path: "^src/(races)/sql/race-events[.]ts$" },
      to: { path: SQL_MAY_NOT, pathNot: `${SQL_MAY}|^src/webhooks/sql/webhook-outbox[.]ts$` },
    },
    {
      name: "race-steps-append-to-the-results-log",
      comment:
        "A race's freeze and its cancellation append the result's entry to the results log in their own " +
        "transaction (results-log/sql/log-append.ts), so a result is final exactly when it is logged. Goes when the " +
        "steps take the log's append as a port.",
      severity: "error",
      from: { path: "^src/(races)/sql/(race-steps|races)[.]ts$" },
      to: {
        path: SQL_MAY_NOT,
        pathNot: `${SQL_MAY}|^src/results-log/sql/log-append[.]ts$`,
      },
    },
    {
      name: "race-corrections-read-the-boards-totals",
      comment:
        "The users a void or a late wager moved are read with their totals now by the boards' statement " +
        "(totalsOfUsers), so a frozen race and a board agree. Goes with the race's own totals read.",
      severity: "error",
      from: { path: "^src/(races)/sql/race-history[.]ts$" },
      to: { path: SQL_MAY_NOT, pathNot: `${SQL_MAY}|^src/boards/sql/held-reads[.]ts$` },
    },
    {
      name: "features-keep-their-sql-and-wire",
      comment:
        "No feature imports another's sql/, wire/ or outbound/ (its storage and its skins are its own): what " +
        "features share they share through ports/, values/, a core, or keys/gate/ (every skin's caller and scopes).",
      severity: "error",
      from: { path: `^src/(${FEATURES})/`, pathNot: "^src/[^/]+/sql/" },
      to: {
        path: `^src/(${FEATURES})/(sql|wire|outbound)/`,
        pathNot: [
          "^src/$1/",
          // A race's stream is held by the live boards' stream slots and written by their stream response.
          // Goes when the stream response moves to platform/wire/ with the slots (issue 50's next step).
          "^src/boards/wire/parts/live-streams[.]ts$",
        ].join("|"),
      },
    },
    {
      name: "features-are-composed-not-composing",
      comment:
        "A feature never imports a service factory, an app, a job, the schema list, the CLI or the server: they " +
        "compose it.",
      severity: "error",
      from: { path: `^src/(${FEATURES})/` },
      to: { path: "^src/(services|apps|jobs|cli|schema)/|^src/(server|entry|main)[.]ts$" },
    },
    {
      name: "platform-imports-no-feature",
      comment:
        "platform/ is the infrastructure every feature stands on (database, transport, errors, observability, " +
        "config, compat, Redis, limits, the shared wire parts): it imports ports/ and values/, never a feature or " +
        "a layer above.",
      severity: "error",
      from: { path: "^src/platform/" },
      to: {
        path: `^src/(${FEATURES}|services|apps|jobs|cli|schema)/|^src/(server|entry|main)[.]ts$`,
        // SIGNING_KEY_FILE is checked when the settings are read (a bad key file stops the start), with the
        // same parser signing uses. Goes when config takes the parsed key from signing at composition.
        pathNot: "^src/signing/core/key-file[.]ts$",
      },
    },
    {
      name: "compat-imports-nothing-of-ours",
      comment:
        "platform/compat/ holds every reliance on a library's internals, one module per library: it imports the " +
        "library and nothing of ours (what it needs, such as a replacement error, is passed in).",
      severity: "error",
      from: { path: "^src/platform/compat/" },
      to: { path: "^src/|^gen/", pathNot: "^src/platform/compat/" },
    },
    {
      name: "database-is-the-floor-of-sql",
      comment:
        "platform/database/ (pools, transactions, the driver's errors, sealed secrets) knows no table of a feature.",
      severity: "error",
      from: { path: "^src/platform/database/" },
      to: {
        path: "^src/platform/(transport|wire|limits|observability|errors|redis|config)|^gen/|node_modules/@connectrpc/",
      },
    },
    {
      name: "transport-knows-no-request-meaning",
      comment: "platform/transport/ moves bytes and headers; it does not know the skins, the gate or storage.",
      severity: "error",
      from: { path: "^src/platform/transport/" },
      to: { path: "^src/platform/(wire|database|limits|redis|observability)/" },
    },
    {
      name: "skins-share-no-skin",
      comment:
        "Each file directly in a wire/ folder is one skin; a skin never imports another. What several skins share " +
        "lives in wire/parts/ or wire/codecs/ (a feature's, or platform/wire/'s when features share it).",
      severity: "error",
      from: { path: "^src/.+/wire/[^/]+[.]ts$" },
      to: { path: "^src/.+/wire/[^/]+[.]ts$" },
    },
    {
      name: "skin-parts-and-codecs-import-no-skin",
      comment: "The parts the skins share, and the codecs, never reach back into a skin, an app or a job.",
      severity: "error",
      from: { path: "^src/.+/wire/(parts|codecs)/" },
      to: { path: "^src/.+/wire/[^/]+[.]ts$|^src/(apps|jobs|cli)/|^src/(server|entry|main)[.]ts$" },
    },
    {
      name: "codecs-do-no-io",
      comment: "A codec turns values into bytes or messages and back; it knows no HTTP, transport, gate or storage.",
      severity: "error",
      from: { path: "^src/.+/wire/codecs/" },
      to: {
        path: "^src/platform/(transport|database|redis|limits|observability)/|^src/[^/]+/(sql|outbound)/|^src/keys/gate/|node_modules/@connectrpc/",
      },
    },
    {
      name: "apps-are-composed-not-imported",
      comment: "Only the server, the CLI and tests build the apps.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(apps|cli)/|^src/server[.]ts$" },
      to: { path: "^src/apps/" },
    },
    {
      name: "services-are-built-by-the-composition",
      comment:
        "services/ builds each service once, the same way for every process (which pools, which adapters, which " +
        "signer): the server, the apps, the jobs and the CLI use it; nothing below it does, and it builds no app.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(apps|cli|jobs|services)/|^src/server[.]ts$" },
      to: { path: "^src/services/" },
    },
    {
      name: "services-build-no-listener",
      comment: "A service factory builds a service, never an app, a job or the CLI.",
      severity: "error",
      from: { path: "^src/services/" },
      to: { path: "^src/(apps|jobs|cli)/|^src/(server|entry|main)[.]ts$" },
    },
    {
      name: "jobs-are-started-not-imported",
      comment: "Background jobs are started by the server (the CLI and the apps may name them); nothing below does.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(apps|cli|jobs)/|^src/server[.]ts$" },
      to: { path: "^src/jobs/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^dist/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
