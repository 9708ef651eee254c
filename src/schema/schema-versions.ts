/**
 * The MariaDB adapter of the schema port (src/ports/schema.ts): the version this build expects, the one the
 * database holds, and the release floor, for readiness.
 */
import type { Pool } from "mysql2/promise";
import type { SchemaVersions } from "../ports/schema.js";
import { currentSchemaVersion } from "./migration-runner.js";
import { isOlderThanFloor, readReleaseFloor, releaseTooOldMessage } from "./release-floor.js";
import { LATEST_SCHEMA_VERSION } from "./schema-migrations.js";

/** `release`: the running release, checked against the schema's release floor (./release-floor.ts). */
export function mariadbSchema(pool: Pool, release: string): SchemaVersions {
  return {
    expected: LATEST_SCHEMA_VERSION,
    current: () => currentSchemaVersion(pool),
    releaseRefusal: async () => {
      const floor = await readReleaseFloor(pool);
      return floor !== undefined && isOlderThanFloor(release, floor) ? releaseTooOldMessage(release, floor) : undefined;
    },
  };
}
