/** What readiness asks storage: is the schema at the version this build expects, and may this build use it. */

export interface SchemaVersions {
  /** The version this build's migrations bring the schema to. */
  readonly expected: number;
  /** The version applied now (0 for an empty schema); rejects when the store does not answer. */
  current(): Promise<number>;
  /**
   * Why this release may not use the schema (its release floor names a newer release: the refusal's text), or
   * undefined when it may. Absent: no floor is kept (the in-memory model).
   */
  releaseRefusal?(): Promise<string | undefined>;
}
