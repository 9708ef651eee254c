/**
 * Who may call an internal service: whoever sends `Authorization: Bearer
 * <token>` with that service's token — INGEST_TOKEN for WagerIngestService,
 * ADMIN_TOKEN for ApiKeyService and RaceService. Two secrets, so the platform that pushes
 * wagers cannot issue keys.
 *
 * The comparison is constant-time: both sides are hashed with SHA-256 (equal
 * lengths whatever was sent) and compared with crypto.timingSafeEqual, so the
 * answer time does not reveal how much of a guess was right.
 *
 * With no token configured, the service is off: every call is refused with
 * FAILED_PRECONDITION naming the setting (the server is not set up for the
 * operation; no credential could make it succeed, so UNAUTHENTICATED would
 * mislead the caller into rotating tokens). Affiliate API keys are never
 * accepted here.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { ServiceError } from "../../platform/errors/catalogue.js";
import { bearerCredential, looksLikeApiKey } from "../core/api-key-secret.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

interface TokenService {
  /** The environment variable holding the token. */
  readonly setting: "INGEST_TOKEN" | "ADMIN_TOKEN";
  /** How messages name the service ("ingest", "the API key service"). */
  readonly what: string;
  readonly disabled: "INGEST_DISABLED" | "ADMIN_DISABLED";
  readonly realm: string;
}

export const INGEST: TokenService = {
  setting: "INGEST_TOKEN",
  what: "ingest",
  disabled: "INGEST_DISABLED",
  realm: "topwagers-ingest",
};

export const ADMIN: TokenService = {
  setting: "ADMIN_TOKEN",
  what: "the API key service",
  disabled: "ADMIN_DISABLED",
  realm: "topwagers-admin",
};

/** RaceService on the internal listener: the ADMIN_TOKEN too (the partner portal defines any affiliate's races). */
export const ADMIN_RACES: TokenService = { ...ADMIN, what: "the race service on the internal listener" };

export class ServiceTokenCheck {
  private readonly expected: Buffer | undefined;

  constructor(
    token: string | undefined,
    private readonly service: TokenService = INGEST,
  ) {
    this.expected = token === undefined || token === "" ? undefined : sha256(token);
  }

  get enabled(): boolean {
    return this.expected !== undefined;
  }

  /** Throws the refusal for this Authorization header, or returns when the caller may call the service. */
  check(authorization: string | null | undefined): void {
    const { setting, what } = this.service;
    if (this.expected === undefined) {
      throw new ServiceError(
        this.service.disabled,
        `${what} is disabled on this server. Set the ${setting} environment variable (16 or more characters) ` +
          "and restart the service to enable it",
      );
    }
    const credential = bearerCredential(authorization);
    if (credential !== undefined && timingSafeEqual(sha256(credential), this.expected)) return;
    const token = setting === "INGEST_TOKEN" ? "ingest token" : "admin token";
    throw new ServiceError(
      "BAD_SERVICE_TOKEN",
      credential !== undefined && looksLikeApiKey(credential)
        ? `affiliate API keys are not accepted by ${what === "ingest" ? "the ingest service" : what}. Send Authorization Bearer with the ${setting}`
        : `missing or invalid ${token}. Send Authorization Bearer with the ${setting}`,
      { headers: { "www-authenticate": `Bearer realm="${this.service.realm}"` } },
    );
  }
}
