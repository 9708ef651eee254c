/**
 * The overlay: `GET {BASE_PATH}/board?key=tw_pub_…&startTimestamp=…&endTimestamp=…&numUsers=…`
 * (optional `mask=true`, `theme=dark|light|transparent`, `rankBy`), one self-contained HTML page
 * (inline style and script, nothing fetched but the avatars) that follows the board's SSE stream,
 * for a streamer's OBS browser source or a phone.
 *
 * The page's own request is admitted and validated as the stream is (a publishable key in `?key=`),
 * with the status the stream would answer. A refusal shows viewers a neutral line and the streamer
 * the reason (console; the page too when top-level outside OBS); a refusal that can pass (a limit, a 503, a key
 * not known yet) is tried again by the page itself, with backoff. Player data is only ever set as
 * text (see parts/overlay-page-assets.ts); the page sends no Referer (its address holds the key).
 */
import { createHash } from "node:crypto";
import { HttpRefusal } from "../../platform/errors/catalogue.js";
import { renderRestError } from "../../platform/errors/renderers.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../../platform/transport/http.js";
import { InvalidQueryError } from "../../values/domain-errors.js";
import type { Scope } from "../../values/scopes.js";
import type { Violation } from "../../values/violation.js";
import type { RankBy } from "../../values/weights.js";
import { validPeriodQuery } from "../core/operation.js";
import { decodeRequestFields } from "./codecs/period-request-json.js";
import { KEY_HINT, OVERLAY_SCRIPT } from "./parts/overlay-page-assets.js";
import { OVERLAY_STYLE } from "./parts/overlay-page-style.js";
import { STREAM_PATH } from "./parts/rest-paths.js";

export const BOARD_PAGE_PATH = "/board";
export const THEMES = ["dark", "light", "transparent"] as const;
type Theme = (typeof THEMES)[number];

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/**
 * Only the page's own inline script (by hash), connections to its origin, and images from anywhere.
 *
 * Styles: OBS's browser source applies its "Custom CSS" (by default `body { background-color:
 * rgba(0, 0, 0, 0); margin: 0px auto; overflow: hidden; }`) by running a script (not subject to the
 * CSP) that appends a `<style>` element with that text to the head. So `style-src-elem` allows inline
 * `<style>` elements ('unsafe-inline'; a hash cannot name the streamer's CSS, and a hash beside it would
 * disable it), and nothing else: no stylesheet from any URL and, through `style-src-attr 'none'`, no
 * `style` attribute (the script sizes text through the CSSOM, which the CSP does not restrict). Markup
 * cannot be injected in the first place: player data is only ever set as text. `style-src` keeps the
 * page's own style by hash for browsers without `style-src-elem`.
 */
export const BOARD_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${hashOf(OVERLAY_SCRIPT)}`,
  `style-src ${hashOf(OVERLAY_STYLE)}`,
  "style-src-elem 'unsafe-inline'",
  "style-src-attr 'none'",
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

export interface OverlayPageOptions {
  readonly basePath: string;
  /** Admits the page's request as the stream's (the key from Authorization or `?key=`); throws to refuse. */
  /** `scope`: what the page shows needs (boards:read for a board, races:read for a race), as its stream does. */
  admit(
    req: NodeRequest,
    urlKey: string | undefined,
    scope: Scope,
  ): Promise<{
    readonly headers: Readonly<Record<string, string>>;
    readonly caller: { readonly defaultRankBy: RankBy | null };
  }>;
}

export class OverlayPage {
  readonly path: string;

  constructor(private readonly options: OverlayPageOptions) {
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
    const race = params.get("race");
    if (race !== null) return this.handleRace(req, res, params, theme, race);
    const fields: Record<string, string> = {};
    for (const name of ["startTimestamp", "endTimestamp", "numUsers", "rankBy"]) {
      const value = params.get(name);
      if (value !== null) fields[name] = value;
    }
    const decoded = decodeRequestFields(fields);
    const violations = [...decoded.violations, ...pageViolations(params)];
    const stream = new URLSearchParams();
    for (const name of STREAM_PARAMETERS) {
      const value = params.get(name);
      if (value !== null) stream.set(name, value);
    }
    const streamPath = `${this.options.basePath}${STREAM_PATH}?${stream}`;
    const mask = params.get("mask") === "true";
    let headers: Readonly<Record<string, string>> = {};
    try {
      this.checkMethod(req);
      const admitted = await this.options.admit(req, params.get("key") ?? undefined, "boards:read");
      headers = admitted.headers;
      const query = validPeriodQuery(decoded.values, violations, admitted.caller.defaultRankBy);
      const config: PageConfig = {
        stream: streamPath,
        mask,
        rankBy: query.rankBy ?? "wagered",
        numUsers: query.numUsers,
      };
      writeWhole(res, 200, { ...headers, ...PAGE_HEADERS }, page(theme, periodText(query.start, query.end), config));
    } catch (reason) {
      // A refusal that can pass is tried again by the page, when its address itself is right.
      const address = validAddress(decoded.values, violations);
      const rankBy = params.get("rankBy");
      refused(res, reason, headers, theme, address === undefined ? "" : periodText(address.start, address.end), {
        ...(address === undefined ? {} : { stream: streamPath }),
        mask,
        rankBy: rankBy === "wagered" || rankBy === "weighted" ? rankBy : "",
        numUsers: address?.numUsers ?? 10,
      });
    }
  }

  /**
   * `race=<slug or race id>`: the race's page, following `{BASE_PATH}/races/{race}/stream` (each event the race
   * as `GET {BASE_PATH}/races/{race}` shows it), or reading `GET {BASE_PATH}/races/{race}` every 3 s where
   * the service has no race stream (404); the race has its own period, rows and ranking.
   */
  private async handleRace(
    req: NodeRequest,
    res: NodeResponse,
    params: URLSearchParams,
    theme: Theme,
    race: string,
  ): Promise<void> {
    const violations = [...raceViolations(race, params), ...pageViolations(params)];
    const key = params.get("key");
    const url = `${this.options.basePath}/races/${encodeURIComponent(race)}`;
    const query = key === null ? "" : `?${new URLSearchParams({ key })}`;
    const follow = { stream: `${url}/stream${query}`, raceUrl: `${url}${query}` };
    const base = { mask: params.get("mask") === "true", rankBy: "" as const, numUsers: 10, race };
    let headers: Readonly<Record<string, string>> = {};
    try {
      this.checkMethod(req);
      headers = (await this.options.admit(req, key ?? undefined, "races:read")).headers;
      if (violations.length > 0) throw new InvalidQueryError(violations);
      writeWhole(res, 200, { ...headers, ...PAGE_HEADERS }, page(theme, "", { ...base, ...follow }));
    } catch (reason) {
      refused(res, reason, headers, theme, "", { ...base, ...(violations.length === 0 ? follow : {}) });
    }
  }

  private checkMethod(req: NodeRequest): void {
    if (req.method !== "GET" && req.method !== "HEAD") {
      throw new HttpRefusal("METHOD_NOT_ALLOWED", `use GET for ${this.path}`, { allow: "GET" });
    }
  }
}

/**
 * Answers a refusal as the stream would (status and headers), with the page: `config.stream` is kept only
 * when trying again can help (not for a wrong address, 400, nor a wrong method, 405).
 */
function refused(
  res: NodeResponse,
  reason: unknown,
  headers: Readonly<Record<string, string>>,
  theme: Theme,
  period: string,
  config: Omit<PageConfig, "problem">,
): void {
  const rendered = renderRestError(reason);
  const messages = (JSON.parse(rendered.body) as { errors: { message: string }[] }).errors.map((e) => e.message);
  const retry = rendered.status !== 400 && rendered.status !== 405 && config.stream !== undefined;
  const retryAfter = Number(rendered.headers["retry-after"] ?? "0");
  const { stream, raceUrl, ...rest } = config;
  const answer: PageConfig = {
    ...rest,
    ...(retry && stream !== undefined ? { stream } : {}),
    ...(retry && raceUrl !== undefined ? { raceUrl } : {}),
    problem: {
      detail: `This leaderboard cannot be shown: ${messages.join(". ")}.${hintFor(rendered.status, config.race !== undefined)}`,
      ...(Number.isInteger(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
    },
  };
  writeWhole(res, rendered.status, { ...headers, ...rendered.headers, ...PAGE_HEADERS }, page(theme, period, answer));
}

/** A race's slug (as race-rules.ts has it) or id (race-id.ts); a race has its own period and rows. */
function raceViolations(race: string, params: URLSearchParams): Violation[] {
  const violations: Violation[] = [];
  if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(race) && !/^race_[a-z2-7]{20}$/.test(race)) {
    violations.push({
      field: "race",
      message: `race must be a race's slug (e.g. monthly) or id (race_…), got ${JSON.stringify(race.slice(0, 80))}`,
    });
  }
  for (const name of ["startTimestamp", "endTimestamp", "numUsers", "rankBy"]) {
    if (params.has(name)) {
      violations.push({ field: name, message: `${name} is not for a race (the race has its own period and rows)` });
    }
  }
  return violations;
}

/** What the page's script is told (its JSON block). */
interface PageConfig {
  /** The stream to follow; absent when the page's address itself is wrong (nothing to try again). */
  readonly stream?: string;
  /** A race's slug or id: the stream's events are the race (title, times, prizes) instead of a board. */
  readonly race?: string;
  /** The race's REST read, asked every few seconds when the service has no race stream. */
  readonly raceUrl?: string;
  readonly mask: boolean;
  /** How the board ranks; "" when not known (the page was refused before its key was read). */
  readonly rankBy: RankBy | "";
  /** The rows to make room for. */
  readonly numUsers: number;
  /** Why the page's own request was refused: shown to the streamer, never on stream. */
  readonly problem?: { readonly detail: string; readonly retryAfterSeconds?: number };
}

/** The period of a right address, or undefined. */
function validAddress(values: Parameters<typeof validPeriodQuery>[0], violations: readonly Violation[]) {
  try {
    return validPeriodQuery(values, violations);
  } catch {
    return undefined;
  }
}

/** What the streamer can do about a refusal; nothing for one that passes by itself (429, 5xx). */
function hintFor(status: number, race: boolean): string {
  if (status === 400 && race) return " Check the address of this page (race, mask, theme).";
  if (status === 400)
    return " Check the address of this page (startTimestamp, endTimestamp, numUsers, rankBy, mask, theme).";
  if (status === 401 || status === 403) return KEY_HINT;
  return "";
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

function page(theme: Theme, period: string, config: PageConfig): string {
  const heading =
    config.race !== undefined ? "Wager race" : config.rankBy === "weighted" ? "Top weighted wagers" : "Top wagers";
  return [
    `<!doctype html><html lang="en" class="theme-${theme}"><head><meta charset="utf-8">`,
    `<meta name="viewport" content="width=device-width, initial-scale=1">`,
    `<meta name="referrer" content="no-referrer"><title>${heading}</title>`,
    `<style>${OVERLAY_STYLE}</style></head>`,
    `<body><main id="board" class="board${config.race === undefined ? "" : " race"}">`,
    `<header><h1 id="title">${heading}</h1><p id="period" class="period">${escapeHtml(period)}</p>`,
    `<span id="status" class="status">${config.problem === undefined ? "connecting" : "offline"}</span></header>`,
    `<p id="next" class="next" hidden></p><p id="mark" class="mark" hidden></p>`,
    `<p id="message" class="message" hidden></p><p id="detail" class="detail" hidden></p>`,
    `<ol id="list" class="list"></ol><p id="empty" class="empty" hidden>No wagers yet in this period.</p></main>`,
    `<script type="application/json" id="config">${scriptJson(config)}</script><script>${OVERLAY_SCRIPT}</script>`,
    `</body></html>`,
  ].join("");
}
