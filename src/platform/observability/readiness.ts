/**
 * Readiness, one answer for every probe: `GET /readyz` and grpc.health.v1 on
 * both listeners. Ready means: not shutting down, the database answers, its
 * schema is at the version this build expects (or newer: then ready with a
 * warning, since a newer release migrated it), this release is not older than
 * the schema's release floor, and the API keys are loaded
 * (before that every key would be refused). Every probe asks the
 * database (a result is never reused: a probe right after an outage must see
 * it), but concurrent probes share one query, so probes cannot load it.
 */

import type { SchemaVersions } from "../../ports/schema.js";
import { SingleFlight } from "../../values/expiring-cache.js";

/**
 * Ready for reads, not for signing (issue 47): the active keys of some sealed kind (result, live, log) this
 * instance cannot open, each with why. Present in a ready answer only when there is such a key.
 */
export interface SigningReadiness {
  readonly status: "key_unopenable";
  readonly keys: readonly { readonly purpose: string; readonly kid: string; readonly message: string }[];
}

export type ReadinessStatus =
  | {
      readonly status: "ready";
      readonly schemaVersion: number;
      readonly warning?: string;
      readonly signing?: SigningReadiness;
    }
  | { readonly status: "release_too_old"; readonly schemaVersion: number; readonly message: string }
  | { readonly status: "shutting_down" }
  | { readonly status: "loading_keys" }
  | { readonly status: "database_unavailable" }
  | { readonly status: "migrations_pending"; readonly schemaVersion: number; readonly expected: number };

/** Every readiness status, in the order /metrics lists them (`topwagers_readiness{status}`). */
export const READINESS_STATUSES = [
  "ready",
  "database_unavailable",
  "migrations_pending",
  "loading_keys",
  "release_too_old",
  "shutting_down",
] as const satisfies readonly ReadinessStatus["status"][];

export class Readiness {
  private serving = true;
  private readonly probes = new SingleFlight<ReadinessStatus>();
  private last: ReadinessStatus["status"] | undefined;

  /** Whether the API keys are loaded; absent on a listener that takes no keys. */
  keysLoaded: (() => boolean) | undefined;

  /** The active sealed keys this instance cannot open (services/sealed-keys-health.ts); absent: none is checked. */
  unopenedKeys: (() => Promise<readonly { purpose: string; id: string; message: string }[]>) | undefined;

  constructor(
    /** The version of the schema (schema/schema-versions.ts on MariaDB). */
    private readonly schema: SchemaVersions,
    /** Told whether each probe reached the database (the outage log lines). */
    private readonly outcomes?: { answered(): void; failed(error: unknown): void },
  ) {}

  /** From now on every probe answers shutting_down. */
  stopServing(): void {
    this.serving = false;
    this.last = "shutting_down";
  }

  async check(): Promise<ReadinessStatus> {
    if (!this.serving) return { status: "shutting_down" };
    const answer = await this.probes.run("database", () => this.probe());
    // A probe that ends after stopServing() does not make a stopping instance look ready again.
    if (this.serving) this.last = answer.status;
    return answer;
  }

  /** The status the last finished check answered (undefined before the first): what /metrics shows. */
  get lastStatus(): ReadinessStatus["status"] | undefined {
    return this.last;
  }

  /** Ready, as a boolean (gRPC health). */
  async ready(): Promise<boolean> {
    return (await this.check()).status === "ready";
  }

  private async probe(): Promise<ReadinessStatus> {
    let version: number;
    try {
      version = await this.schema.current();
    } catch (error) {
      // An empty schema is version 0 already (currentSchemaVersion): any error here is the database.
      this.outcomes?.failed(error);
      return { status: "database_unavailable" };
    }
    this.outcomes?.answered();
    if (version < this.schema.expected) {
      return { status: "migrations_pending", schemaVersion: version, expected: this.schema.expected };
    }
    const refusal = await this.releaseRefusal();
    if (refusal !== undefined) return { status: "release_too_old", schemaVersion: version, message: refusal };
    if (this.keysLoaded !== undefined && !this.keysLoaded()) return { status: "loading_keys" };
    const signing = await this.signingReadiness();
    const ready = { status: "ready", schemaVersion: version } as const;
    const ahead = version > this.schema.expected ? { warning: schemaAheadWarning(version, this.schema.expected) } : {};
    return { ...ready, ...ahead, ...(signing === undefined ? {} : { signing }) };
  }

  /** Not ready for signing, and why; a check that cannot be made now leaves the answer to the next probe. */
  private async signingReadiness(): Promise<SigningReadiness | undefined> {
    const unopened = await this.unopenedKeys?.().catch(() => []);
    if (unopened === undefined || unopened.length === 0) return undefined;
    const keys = unopened.map((key) => ({ purpose: key.purpose, kid: key.id, message: key.message }));
    return { status: "key_unopenable", keys };
  }

  /** The floor's refusal; a floor that cannot be read now leaves the answer to the next probe. */
  private async releaseRefusal(): Promise<string | undefined> {
    try {
      return await this.schema.releaseRefusal?.();
    } catch {
      return undefined;
    }
  }
}

/** What the log and `/readyz` say when a newer release has migrated the schema past what this one knows. */
export function schemaAheadWarning(found: number, known: number): string {
  return (
    `the schema is at version ${found}, newer than this release knows (${known}): a newer release migrated it. ` +
    "This release still serves, but data the newer migrations bring is not read here; finish the roll-out or " +
    'roll back as docs/operations.md "Rolling back" says'
  );
}
