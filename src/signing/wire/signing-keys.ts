/**
 * The signing keys' skin, open to every caller (no key): `GET /.well-known/jwks.json` on the public port (a JWK
 * Set, RFC 7517, cacheable by anyone for JWKS_MAX_AGE_SECONDS) holds the results' keys only, and
 * `GET /.well-known/jwks-live.json` the live keys only (what signs live races and boards), so a verifier of results
 * that trusts the first never accepts a live signature (RFC 8725 §3.12); SigningKeyService.GetSigningKeys answers
 * both, apart (`keys` and `live_keys`), over Connect, gRPC and gRPC-Web, with the results log's verifier key
 * (`log_verifier_key`). docs/verify.md says how to check a signature with them.
 */
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { GetSigningKeysResponseSchema, SigningKeyService } from "../../../gen/topwagers/v1/signing_pb.js";
import { ServiceError } from "../../platform/errors/catalogue.js";
import type { Logger } from "../../platform/logger.js";
import { type NodeRequest, type NodeResponse, writeWhole } from "../../platform/transport/http.js";
import type { PublishedSigningKey } from "../../ports/signing.js";
import { jwkSet } from "../core/keys.js";
import type { PublishedKeys } from "../core/published-keys.js";

export const JWKS_PATH = "/.well-known/jwks.json";
export const LIVE_JWKS_PATH = "/.well-known/jwks-live.json";
/** How long a client or cache may keep the JWK Set: make a key, wait this long, then activate it. */
export const JWKS_MAX_AGE_SECONDS = 300;

const JSON_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  "access-control-allow-origin": "*",
};

export class SigningKeysSkin {
  readonly path = JWKS_PATH;
  readonly livePath = LIVE_JWKS_PATH;

  constructor(
    private readonly published: PublishedKeys,
    private readonly live: PublishedKeys,
    private readonly logger: Logger,
    /** The results log's verifier key (GetSigningKeys' `log_verifier_key`); absent: answered empty. */
    private readonly logVerifierKey: () => Promise<string | undefined> = async () => undefined,
  ) {}

  /** The JWK Set at `path` (the results' keys) or at `livePath` (the live keys). */
  async handle(req: NodeRequest, res: NodeResponse, path: string): Promise<void> {
    let body: string;
    try {
      body = JSON.stringify(jwkSet(await (path === this.livePath ? this.live : this.published).keys()));
    } catch (error) {
      this.logger.warn({ err: error }, "the signing keys could not be read for the JWKS");
      const refusal = JSON.stringify({
        data: null,
        errors: [{ code: "unavailable", message: "the signing keys could not be read; try again" }],
      });
      // Readable by a page of any origin, as the keys are (a verify page hosted elsewhere says why it failed).
      writeWhole(res, 503, { ...JSON_HEADERS, "content-length": String(Buffer.byteLength(refusal)) }, refusal);
      return;
    }
    const headers = {
      "content-type": "application/jwk-set+json",
      "cache-control": `public, max-age=${JWKS_MAX_AGE_SECONDS}`,
      "access-control-allow-origin": "*",
      "content-length": String(Buffer.byteLength(body)),
    };
    writeWhole(res, 200, headers, req.method === "HEAD" ? "" : body);
  }

  register(router: ConnectRouter): void {
    const { published, live, logVerifierKey } = this;
    router.service(SigningKeyService, {
      async getSigningKeys() {
        const [keys, liveKeys, logKey] = await Promise.all([published.keys(), live.keys(), logVerifierKey()]).catch(
          () => {
            throw new ServiceError("DATABASE_UNAVAILABLE", "the signing keys could not be read; try again");
          },
        );
        return create(GetSigningKeysResponseSchema, {
          issuer: published.issuer,
          keys: signingKeyMessages(keys),
          liveKeys: signingKeyMessages(liveKeys),
          logVerifierKey: logKey ?? "",
        });
      },
    });
  }
}

/** The keys as SigningKey messages: each JWK with its state and when it was made. */
function signingKeyMessages(keys: readonly PublishedSigningKey[]) {
  return jwkSet(keys).keys.map((jwk, index) => ({
    ...jwk,
    state: keys[index]?.state ?? "",
    createdAt: BigInt(keys[index]?.createdAt ?? 0),
  }));
}
