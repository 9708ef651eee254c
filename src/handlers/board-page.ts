/**
 * The overlay: `GET {BASE_PATH}/board?key=tw_pub_…&startTimestamp=…&endTimestamp=…&numUsers=…`
 * (optional `mask=true`, `theme=dark|light|transparent`, `rankBy`), one self-contained HTML page
 * (inline style and script, nothing fetched but the avatars) that follows the board's SSE stream,
 * for a streamer's OBS browser source or a phone.
 *
 * The page's own request is admitted and validated as the stream is (a publishable key in `?key=`),
 * so an invalid key or period is a readable message in the page, with the status the stream would
 * answer. Player data is only ever set as text (see parts/board-page-assets.ts); the page sends no
 * Referer (its address holds the key) and its Content-Security-Policy allows only its own inline
 * code (by hash), same-origin connections and images.
 */
import { createHash } from "node:crypto";
import { decodeRequestFields } from "../codecs/period-request-json.js";
import { HttpRefusal } from "../errors/catalogue.js";
import { renderRestError } from "../errors/renderers.js";
import { validPeriodQuery } from "../leaderboard/operation.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../transport/http.js";
import type { Violation } from "../values/violation.js";
import { OVERLAY_SCRIPT, OVERLAY_STYLE } from "./parts/board-page-assets.js";
import { STREAM_PATH } from "./parts/rest-paths.js";

export const BOARD_PAGE_PATH = "/board";
export const THEMES = ["dark", "light", "transparent"] as const;
type Theme = (typeof THEMES)[number];

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/** Only the page's own inline style and script, connections to its origin, and images from anywhere. */
export const BOARD_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${hashOf(OVERLAY_SCRIPT)}`,
  `style-src ${hashOf(OVERLAY_STYLE)}`,
  "img-src https: http:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const PAGE_HEADERS = {
  "content-type": "text/html; charset=utf-8",
  // The address holds the key: never cached, never sent as a Referer.
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "content-security-policy": BOARD_CONTENT_SECURITY_POLICY,
};

/** The request parameters the page passes on to the stream. */
const STREAM_PARAMETERS = ["key", "startTimestamp", "endTimestamp", "numUsers", "rankBy"] as const;

export interface BoardPageOptions {
  readonly basePath: string;
  /** Admits the page's request as the stream's (the key from Authorization or `?key=`); throws to refuse. */
  admit(req: NodeRequest, urlKey: string | undefined): Promise<{ readonly headers: Readonly<Record<string, string>> }>;
}

export class BoardPage {
  readonly path: string;

  constructor(private readonly options: BoardPageOptions) {
    this.path = `${options.basePath}${BOARD_PAGE_PATH}`;
  }

  matches(path: string): boolean {
    return path === this.path;
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const params = new URLSearchParams((req.url ?? "").split("?")[1] ?? "");
    const theme = (THEMES as readonly string[]).includes(params.get("theme") ?? "dark")
      ? ((params.get("theme") ?? "dark") as Theme)
      : "dark";
    let headers: Readonly<Record<string, string>> = {};
    try {
      if (req.method !== "GET" && req.method !== "HEAD") {
        throw new HttpRefusal("METHOD_NOT_ALLOWED", `use GET for ${this.path}`, { allow: "GET" });
      }
      headers = (await this.options.admit(req, params.get("key") ?? undefined)).headers;
      const fields: Record<string, string> = {};
      for (const name of ["startTimestamp", "endTimestamp", "numUsers", "rankBy"]) {
        const value = params.get(name);
        if (value !== null) fields[name] = value;
      }
      const decoded = decodeRequestFields(fields);
      const query = validPeriodQuery(decoded.values, [...decoded.violations, ...pageViolations(params)]);
      const stream = new URLSearchParams();
      for (const name of STREAM_PARAMETERS) {
        const value = params.get(name);
        if (value !== null) stream.set(name, value);
      }
      const config = {
        stream: `${this.options.basePath}${STREAM_PATH}?${stream}`,
        mask: params.get("mask") === "true",
        rankBy: params.get("rankBy") ?? "",
      };
      writeWhole(res, 200, { ...headers, ...PAGE_HEADERS }, page(theme, periodText(query.start, query.end), config));
    } catch (reason) {
      const rendered = renderRestError(reason);
      const messages = (JSON.parse(rendered.body) as { errors: { message: string }[] }).errors.map((e) => e.message);
      writeWhole(
        res,
        rendered.status,
        { ...headers, ...rendered.headers, ...PAGE_HEADERS },
        page(theme, "", undefined, messages),
      );
    }
  }
}

/** The page's own parameters: `mask` and `theme`. */
function pageViolations(params: URLSearchParams): Violation[] {
  const violations: Violation[] = [];
  const mask = params.get("mask");
  if (mask !== null && mask !== "true" && mask !== "false") {
    violations.push({ field: "mask", message: `mask must be true or false, got ${JSON.stringify(mask)}` });
  }
  const theme = params.get("theme");
  if (theme !== null && !(THEMES as readonly string[]).includes(theme)) {
    violations.push({
      field: "theme",
      message: `theme must be dark, light or transparent, got ${JSON.stringify(theme)}`,
    });
  }
  return violations;
}

const DATE = new Intl.DateTimeFormat("en-GB", {
  day: "numeric",
  month: "short",
  year: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  timeZone: "UTC",
});

function periodText(start: number, end: number): string {
  return `${DATE.format(start * 1000)} – ${DATE.format(end * 1000)} UTC`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON safe inside a <script> element: no "<", ">", "&" or line separators as themselves. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

function page(
  theme: Theme,
  period: string,
  config: { stream: string; mask: boolean; rankBy: string } | undefined,
  problems: readonly string[] = [],
): string {
  const message =
    problems.length === 0
      ? `<p id="message" class="message" hidden></p>`
      : `<p id="message" class="message">This leaderboard cannot be shown: ${problems.map(escapeHtml).join(". ")}. Check the address of this page (key, startTimestamp, endTimestamp, numUsers).</p>`;
  return [
    `<!doctype html><html lang="en"><head><meta charset="utf-8">`,
    `<meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta name="referrer" content="no-referrer"><title>Top wagers</title>`,
    `<style>${OVERLAY_STYLE}</style></head>`,
    `<body class="theme-${theme}"><main class="board">`,
    `<header><h1>Top wagers</h1><p class="period">${escapeHtml(period)}</p>`,
    `<span id="status" class="status">${config === undefined ? "offline" : "connecting"}</span></header>`,
    message,
    `<ol id="list" class="list"></ol><p id="empty" class="empty" hidden>No wagers yet in this period.</p></main>`,
    config === undefined
      ? ""
      : `<script type="application/json" id="config">${scriptJson(config)}</script><script>${OVERLAY_SCRIPT}</script>`,
    `</body></html>`,
  ].join("");
}
