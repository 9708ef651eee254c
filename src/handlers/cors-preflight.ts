/**
 * CORS preflights (OPTIONS) of the paths a browser page calls with a publishable key: the REST operation and its
 * live stream, and the paths the app adds (the races' REST reads). 204 with the CORS headers when some usable publishable key allows the Origin, else 403 in the REST
 * envelope, without them.
 */
import type { Admission } from "../auth/admission.js";
import { HttpRefusal } from "../errors/catalogue.js";
import type { Logger } from "../logger.js";
import { nodeExchange } from "../transport/exchange.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../transport/http.js";
import { OPERATION_PATH, STREAM_PATH } from "./parts/rest-paths.js";
import { refuse } from "./parts/rest-reply.js";

export interface CorsPreflightOptions {
  readonly basePath: string;
  readonly admission: Admission;
  readonly logger?: Logger;
  /** Other paths a page may call with a publishable key (the races' REST reads). */
  readonly alsoFor?: (path: string) => boolean;
}

export class CorsPreflight {
  private readonly paths: ReadonlySet<string>;

  constructor(private readonly options: CorsPreflightOptions) {
    this.paths = new Set([`${options.basePath}${OPERATION_PATH}`, `${options.basePath}${STREAM_PATH}`]);
  }

  /** An OPTIONS request to one of the two paths. */
  matches(method: string | undefined, path: string): boolean {
    return method === "OPTIONS" && (this.paths.has(path) || this.options.alsoFor?.(path) === true);
  }

  async handle(req: NodeRequest, res: NodeResponse): Promise<void> {
    const origin = req.headers.origin;
    const answer = this.options.admission.preflight(origin);
    if (answer.allowed) return writeWhole(res, 204, { ...answer.headers, "cache-control": "no-store" }, "");
    const message =
      origin === undefined
        ? "a CORS preflight needs an Origin header"
        : `origin ${origin} is not allowed by any publishable key`;
    return refuse(nodeExchange(req, res), new HttpRefusal("CORS_REFUSED", message), undefined, this.options.logger);
  }
}
