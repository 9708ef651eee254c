/**
 * This process's row in `instances` (../schema/instance-registry.ts), written every HEARTBEAT_MS on the one loop of
 * jobs (./every.ts) and deleted when the process stops. A server first reads the retention horizons (its caches drop
 * what a moved horizon refuses before the read returns: ../ingest/sql/retention-horizon.ts HorizonWatch) and then
 * reports their generation as the one it answers under; the retention job deletes only once every live server
 * reported the current one.
 * A CLI command reports its connections only (it reads the horizons in each statement). A beat that fails (the
 * database away, a schema before migration 23) is tried again at the next.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { HorizonWatch } from "../ingest/sql/retention-horizon.js";
import type { Database } from "../platform/database/database.js";
import type { Logger } from "../platform/logger.js";
import { packageInfo } from "../platform/package-info.js";
import { forgetInstance, type InstanceReport, reportInstance } from "../schema/instance-registry.js";
import { every } from "./every.js";

export const HEARTBEAT_MS = 5_000;

export interface HeartbeatOptions {
  readonly database: Database;
  readonly role: InstanceReport["role"];
  /** A server's horizons, read before each beat; absent for a command. */
  readonly horizons?: HorizonWatch;
  /** The fingerprints of the WEBHOOK_SECRET_KEY this process seals and opens with (SecretBox.fingerprints). */
  readonly keys: { readonly seals: string; readonly opens: readonly string[] };
  readonly logger: Logger;
  /** Every how many ms; default HEARTBEAT_MS. */
  readonly everyMs?: number;
}

export interface Heartbeat {
  /** This process's id in `instances`. */
  readonly id: string;
  /** One beat now (the first one is sent at start). */
  beat(): Promise<void>;
  /** Stops beating and deletes the row. */
  stop(): Promise<void>;
}

export function startInstanceHeartbeat(options: HeartbeatOptions): Heartbeat {
  const id = randomBytes(12).toString("hex");
  const started = Math.floor(Date.now() / 1000);
  const { version, commit } = packageInfo();
  let failing = false;
  const beat = async (): Promise<void> => {
    const horizons = options.horizons === undefined ? undefined : await options.horizons.refresh();
    await reportInstance(options.database.write, {
      id,
      role: options.role,
      release: version,
      commit,
      host: hostname(),
      pid: process.pid,
      startedAt: started,
      horizons:
        horizons === undefined
          ? undefined
          : { wagers: horizons.wagers, hourly: horizons.hourly, generation: horizons.generation },
      connections: options.database.connectionIds(),
      sealsWith: options.keys.seals,
      opensWith: options.keys.opens,
    });
    if (failing) options.logger.info({ instance: id }, "instance heartbeat: registered again");
    failing = false;
  };
  const job = every(options.everyMs ?? HEARTBEAT_MS, beat, {
    onError: (error) => {
      if (!failing) options.logger.warn({ err: error, instance: id }, "instance heartbeat failed; tried again");
      failing = true;
    },
  });
  return {
    id,
    beat,
    async stop() {
      await job.stop();
      await forgetInstance(options.database.write, id).catch(() => undefined);
    },
  };
}
