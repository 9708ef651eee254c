/** What readiness asks storage: is the schema at the version this build expects. */

export interface SchemaVersions {
  /** The version this build's migrations bring the schema to. */
  readonly expected: number;
  /** The version applied now (0 for an empty schema); rejects when the store does not answer. */
  current(): Promise<number>;
}
