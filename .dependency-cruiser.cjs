// The direction rule of docs/architecture.md, held by `npm run lint`:
// transport → apps → handlers → domain → ports ← adapters (storage, Redis).
// A rule names the layer it protects; an exception names the file, why, and who removes it.

/**
 * The domain: the leaderboard's rules, its cache policy, the change-feed logic, the live boards, the ingest
 * rules and readers, the key rules (auth/key-admin.ts), the races' rules (races/) and the webhooks' delivery rules (webhooks/).
 */
const DOMAIN = "^src/(leaderboard|values|cache|ingest|races|webhooks)/|^src/auth/key-admin[.]ts$";
/** Infrastructure the domain never imports (its errors are its own; skins map them). */
const OUTER =
  "^src/(transport|apps|handlers|codecs|auth|errors|compat|storage|outbound|cli|observability|limits)/" +
  "|^src/(server|config|entry|main)[.]ts$|^src/config/|^gen/" +
  "|node_modules/(@connectrpc|@bufbuild|mysql2|ioredis|rate-limiter-flexible|prom-client|@opentelemetry)/";

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
      name: "domain-stays-pure",
      comment:
        "The domain imports no transport, Connect, mysql2, ioredis, auth, handlers or storage code: " +
        "it returns values or throws its own errors (leaderboard/domain-errors.ts), see docs/architecture.md.",
      severity: "error",
      from: { path: DOMAIN },
      // auth/api-key-secret.ts is the key format (generate, hash, recognise) on node:crypto alone: key-admin.ts
      // makes keys with it. It stays beside the gate that reads keys; it imports nothing of ours.
      to: { path: OUTER, pathNot: "^src/auth/api-key-secret[.]ts$" },
    },
    {
      name: "races-are-pure",
      comment:
        "races/ is the races' rules as pure functions (standings and prizes, validation, recurrence, states, the " +
        "digest): it imports values/, ports' types, its own modules, luxon and node: modules, nothing else.",
      severity: "error",
      from: { path: "^src/races/" },
      to: { path: "^src/|node_modules/", pathNot: "^src/(races|values|ports)/|node_modules/(@types/)?luxon/" },
    },
    {
      name: "ports-are-interfaces",
      comment:
        "src/ports/ holds only the interfaces the services take (and their types): it imports values/ and " +
        "nothing else, so a port never drags an adapter or the domain along.",
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
      name: "compat-imports-nothing-of-ours",
      comment:
        "compat/ holds every reliance on a library's internals, one module per library: it imports the library " +
        "and nothing of ours (what it needs, such as a replacement error, is passed in).",
      severity: "error",
      from: { path: "^src/compat/" },
      to: { path: "^src/|^gen/", pathNot: "^src/compat/" },
    },
    {
      name: "storage-is-an-adapter",
      comment:
        "Storage implements what the domain needs; it imports values/, its driver and its own modules, " +
        "never the domain's modules, Connect, or the layers above.",
      severity: "error",
      from: { path: "^src/storage/" },
      to: {
        path:
          "^src/(leaderboard|ingest|webhooks|outbound|handlers|codecs|apps|transport|auth|errors|observability|cli|limits|cache)/" +
          "|^src/(server|config)[.]ts$|^src/config/|^gen/|node_modules/(@connectrpc|@bufbuild|ioredis)/",
      },
    },
    {
      name: "handlers-are-skins",
      comment: "A skin is wired by apps/; it never imports an app, the server or the CLI.",
      severity: "error",
      from: { path: "^src/handlers/" },
      to: { path: "^src/(apps|cli)/|^src/(server|entry|main)[.]ts$" },
    },
    {
      name: "skins-share-no-skin",
      comment:
        "Each file directly in src/handlers/ is one skin; a skin never imports another. What several skins share " +
        "lives in src/codecs/ (the request and the entries as JSON and as messages) or src/handlers/parts/ " +
        "(the REST reply, the live viewer, paths), see docs/architecture.md.",
      severity: "error",
      from: { path: "^src/handlers/[^/]+[.]ts$" },
      to: { path: "^src/handlers/[^/]+[.]ts$" },
    },
    {
      name: "skin-parts-and-codecs-import-no-skin",
      comment: "The parts the skins share, and the codecs, never reach back into a skin or an app.",
      severity: "error",
      from: { path: "^src/(handlers/parts|codecs)/" },
      to: { path: "^src/handlers/[^/]+[.]ts$|^src/(apps|cli)/|^src/(server|entry|main)[.]ts$" },
    },
    {
      name: "codecs-do-no-io",
      comment: "A codec turns values into bytes or messages and back; it knows no HTTP, transport or storage.",
      severity: "error",
      from: { path: "^src/codecs/" },
      to: { path: "^src/(transport|handlers|storage|redis|auth|limits|observability)/|node_modules/@connectrpc/" },
    },
    {
      name: "transport-knows-no-request-meaning",
      comment: "transport/ moves bytes and headers; it does not know the skins, the domain or storage.",
      severity: "error",
      from: { path: "^src/transport/" },
      to: { path: "^src/(apps|handlers|codecs|leaderboard|ingest|storage|auth|cli|limits)/" },
    },
    {
      name: "apps-are-composed-not-imported",
      comment: "Only the server, the CLI and tests build the apps.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(apps|cli)/|^src/server[.]ts$" },
      to: { path: "^src/apps/" },
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
