/**
 * A CORS preflight (OPTIONS) of a path a browser page calls with a publishable key: 204 with the CORS headers when
 * some usable publishable key allows the Origin, else 403 in the REST envelope, without them. Which paths take
 * preflights is the routing table's (apps/public-routes.ts): the REST operation, its live stream and the races' reads.
 */
import type { Admission } from "../../keys/gate/admission.js";
import { HttpRefusal } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import { nodeExchange } from "../../platform/transport/exchange.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../../platform/transport/http.js";
import { refuse } from "../../platform/wire/parts/rest-reply.js";

export interface CorsPreflightOptions {
  readonly admission: Admission;
  readonly logger?: Logger;
}

export class CorsPreflight {
  constructor(private readonly options: CorsPreflightOptions) {}

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
