/**
 * Who may ingest: whoever sends `Authorization: Bearer <INGEST_TOKEN>`.
 *
 * The comparison is constant-time: both sides are hashed with SHA-256 (equal
 * lengths whatever was sent) and compared with crypto.timingSafeEqual, so the
 * answer time does not reveal how much of a guess was right.
 *
 * With no INGEST_TOKEN configured, ingest is off: every call is refused with
 * FAILED_PRECONDITION (the server is not set up for the operation; no
 * credential could make it succeed, so UNAUTHENTICATED would mislead the
 * caller into rotating tokens). Affiliate API keys are never accepted here.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { ServiceError } from "../errors.js";
import { bearerCredential, looksLikeApiKey } from "./api-key-secret.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

export class IngestTokenCheck {
  private readonly expected: Buffer | undefined;

  constructor(token: string | undefined) {
    this.expected = token === undefined || token === "" ? undefined : sha256(token);
  }

  get enabled(): boolean {
    return this.expected !== undefined;
  }

  /** Throws the refusal for this Authorization header, or returns when the caller may ingest. */
  check(authorization: string | null | undefined): void {
    if (this.expected === undefined) {
      throw new ServiceError(
        "ingest is disabled on this server. Set the INGEST_TOKEN environment variable (16 or more characters) " +
          "and restart the service to enable it",
        Code.FailedPrecondition,
      );
    }
    const credential = bearerCredential(authorization);
    if (credential !== undefined && timingSafeEqual(sha256(credential), this.expected)) return;
    throw new ServiceError(
      credential !== undefined && looksLikeApiKey(credential)
        ? "affiliate API keys are not accepted by the ingest service. Send Authorization Bearer with the INGEST_TOKEN"
        : "missing or invalid ingest token. Send Authorization Bearer with the INGEST_TOKEN",
      Code.Unauthenticated,
      [],
      { "www-authenticate": 'Bearer realm="topwagers-ingest"' },
    );
  }
}
