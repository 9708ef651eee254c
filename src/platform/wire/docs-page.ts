/**
 * The interactive API reference on the public port: `GET /docs` renders
 * docs/openapi.yaml with Swagger UI, whose files come from the swagger-ui-dist
 * package in node_modules (no CDN: the page works offline), and
 * `GET /openapi.json` serves the document itself. The document is read and
 * converted once, when the app is built; its `servers` entry is replaced by
 * this server's own base path, so "Try it out" calls the server that serves
 * the page, and the page's Content-Security-Policy allows nothing else.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { parse } from "yaml";
import { acceptsGzip } from "../transport/accept-encoding.js";
import type { NodeRequest, NodeResponse } from "../transport/http.js";

export const DOCS_PATH = "/docs";
export const OPENAPI_JSON_PATH = "/openapi.json";

/**
 * Swagger UI needs inline styles (React sets style attributes) and data: images
 * (icons in its CSS); scripts, styles and calls go to this origin only.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const gzipAsync = promisify(gzip);

interface Resource {
  readonly contentType: string;
  readonly body: Buffer;
  readonly etag: string;
  readonly cacheControl: string;
  gzipped?: Promise<Buffer>;
}

export interface DocsPage {
  /** True when this GET or HEAD request is for the docs page, its files or the document. */
  matches(path: string, method: string | undefined): boolean;
  handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void>;
}

/** Where docs/openapi.yaml is: three levels above this module in src/, four in dist/src/. */
function openApiYamlPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(here, "..", "..", "..", "docs", "openapi.yaml"),
    join(here, "..", "..", "..", "..", "docs", "openapi.yaml"),
  ];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found === undefined) throw new Error(`docs/openapi.yaml not found (looked at ${candidates.join(", ")})`);
  return found;
}

/** The OpenAPI document as served: the YAML as JSON, with this server as its only server. */
export function servedOpenApiDocument(basePath: string): Record<string, unknown> {
  const document = parse(readFileSync(openApiYamlPath(), "utf8")) as Record<string, unknown>;
  return {
    ...document,
    servers: [{ url: basePath === "" ? "/" : basePath, description: "This server" }],
  };
}

/** The page's own script: starts Swagger UI on the served document. */
const INITIALIZER = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "${OPENAPI_JSON_PATH}",
    dom_id: "#swagger-ui",
    deepLinking: true,
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    validatorUrl: null,
    tryItOutEnabled: true,
    supportedSubmitMethods: ["post"],
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    defaultModelExpandDepth: 3,
    docExpansion: "list"
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>topwagers API reference</title>
    <link rel="stylesheet" href="${DOCS_PATH}/swagger-ui.css">
    <link rel="icon" type="image/png" href="${DOCS_PATH}/favicon-32x32.png" sizes="32x32">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${DOCS_PATH}/swagger-ui-bundle.js"></script>
    <script src="${DOCS_PATH}/init.js"></script>
  </body>
</html>
`;

function resource(contentType: string, body: Buffer | string, cacheControl: string): Resource {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  const etag = `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`;
  return { contentType, body: bytes, etag, cacheControl };
}

/** Files of swagger-ui-dist read once per process (about 2 MB), shared by every app. */
let swaggerUiFiles: ReadonlyMap<string, Resource> | undefined;

function swaggerUi(): ReadonlyMap<string, Resource> {
  if (swaggerUiFiles === undefined) {
    const require = createRequire(import.meta.url);
    const directory = dirname(require.resolve("swagger-ui-dist/package.json"));
    // The files are versioned only by the package: let browsers keep them a day.
    const cache = "public, max-age=86400";
    const file = (name: string) => readFileSync(join(directory, name));
    swaggerUiFiles = new Map([
      [`${DOCS_PATH}/swagger-ui.css`, resource("text/css; charset=utf-8", file("swagger-ui.css"), cache)],
      [
        `${DOCS_PATH}/swagger-ui-bundle.js`,
        resource("text/javascript; charset=utf-8", file("swagger-ui-bundle.js"), cache),
      ],
      [`${DOCS_PATH}/favicon-32x32.png`, resource("image/png", file("favicon-32x32.png"), cache)],
    ]);
  }
  return swaggerUiFiles;
}

export function createDocsPage(options: { basePath: string }): DocsPage {
  const resources = new Map<string, Resource>(swaggerUi());
  resources.set(DOCS_PATH, resource("text/html; charset=utf-8", PAGE, "no-cache"));
  resources.set(`${DOCS_PATH}/init.js`, resource("text/javascript; charset=utf-8", INITIALIZER, "no-cache"));
  resources.set(
    OPENAPI_JSON_PATH,
    resource("application/json; charset=utf-8", JSON.stringify(servedOpenApiDocument(options.basePath)), "no-cache"),
  );

  return {
    matches(path, method) {
      return (method === "GET" || method === "HEAD") && resources.has(path);
    },
    async handle(req, res, path) {
      const found = resources.get(path);
      if (found === undefined) throw new Error(`no docs resource at ${path}`);
      const headers: Record<string, string> = {
        "content-type": found.contentType,
        "cache-control": found.cacheControl,
        etag: found.etag,
        vary: "Accept-Encoding",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
      };
      if (found.contentType.startsWith("text/html")) headers["content-security-policy"] = DOCS_CONTENT_SECURITY_POLICY;
      const out = res as ServerResponse;
      if (req.headers["if-none-match"] === found.etag) {
        out.writeHead(304, headers);
        out.end();
        return;
      }
      let payload = found.body;
      if (acceptsGzip(req.headers["accept-encoding"]) && found.contentType !== "image/png") {
        found.gzipped ??= gzipAsync(found.body);
        payload = await found.gzipped;
        headers["content-encoding"] = "gzip";
      }
      headers["content-length"] = String(payload.length);
      out.writeHead(200, headers);
      out.end(req.method === "HEAD" ? undefined : payload);
    },
  };
}
