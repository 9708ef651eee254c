/**
 * The results log as C2SP tlog-tiles (docs/verify.md, "Where the log is"), on the public port, open to every
 * caller (no key) and to pages of any origin (`Access-Control-Allow-Origin: *`), cacheable by any CDN:
 * - `GET /log/checkpoint`: the latest checkpoint, a signed note (`text/plain; charset=utf-8`, a second's cache);
 * - `GET /log/tile/<L>/<N>[.p/<W>]` and `GET /log/tile/entries/<N>[.p/<W>]`: the tiles and entry bundles of the
 *   latest checkpoint's tree (`application/octet-stream`; full ones immutable, partial ones a minute), 404 for one
 *   the tree does not hold or a path that names no tile;
 * - `GET /log/vkey`: the checkpoints' verifier key, one line (404 until the log's key is made).
 * What is served is read from the database (results-log/core/log-reader.ts); a database that does not answer is a
 * 503 that no cache keeps.
 */
import type { Logger } from "../../platform/logger.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../../platform/transport/http.js";
import type { LogReader } from "../core/log-reader.js";
import { parseTilePath, TILE_WIDTH } from "../core/tiles.js";

export const LOG_PATH = "/log";

const TEXT = "text/plain; charset=utf-8";
const BYTES = "application/octet-stream";
const IMMUTABLE = "public, max-age=31536000, immutable";
const PARTIAL = "public, max-age=60";
const CHECKPOINT = "public, max-age=1";
const VKEY = "public, max-age=300";
const NOT_STORED = "no-store";

export class LogSkin {
  readonly path = LOG_PATH;

  constructor(
    private readonly reader: Pick<LogReader, "checkpoint" | "tile" | "verifierKey">,
    private readonly logger: Logger,
  ) {}

  matches(path: string): boolean {
    return path.startsWith(`${LOG_PATH}/`);
  }

  /** The path family's template, for traces. */
  route(path: string): string {
    const rest = path.slice(LOG_PATH.length + 1);
    if (rest === "checkpoint" || rest === "vkey") return path;
    if (rest.startsWith("tile/entries/")) return `${LOG_PATH}/tile/entries/{N}`;
    return `${LOG_PATH}/tile/{L}/{N}`;
  }

  async handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void> {
    const send = (status: number, type: string, cache: string, body: string | Uint8Array) =>
      answer(req, res, status, { "content-type": type, "cache-control": cache }, body);
    const rest = path.slice(LOG_PATH.length + 1);
    try {
      if (rest === "checkpoint") {
        const checkpoint = await this.reader.checkpoint();
        if (checkpoint === undefined) return send(404, TEXT, NOT_STORED, "no checkpoint yet\n");
        return send(200, TEXT, CHECKPOINT, checkpoint.note);
      }
      if (rest === "vkey") {
        const key = await this.reader.verifierKey();
        if (key === undefined) return send(404, TEXT, NOT_STORED, "the log has no key yet\n");
        return send(200, TEXT, VKEY, `${key}\n`);
      }
      const tile = parseTilePath(rest);
      const bytes = tile === undefined ? undefined : await this.reader.tile(tile);
      if (tile === undefined || bytes === undefined) return send(404, TEXT, NOT_STORED, "no such tile\n");
      return send(200, BYTES, tile.width === TILE_WIDTH ? IMMUTABLE : PARTIAL, bytes);
    } catch (error) {
      this.logger.warn({ err: error, path }, "the results log could not be read");
      return send(503, TEXT, NOT_STORED, "the log could not be read; try again\n");
    }
  }
}

function answer(
  req: NodeRequest,
  res: NodeResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: string | Uint8Array,
): void {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  writeWhole(
    res,
    status,
    {
      ...headers,
      "access-control-allow-origin": "*",
      "x-content-type-options": "nosniff",
      "content-length": String(bytes.length),
    },
    req.method === "HEAD" ? "" : bytes,
  );
}
