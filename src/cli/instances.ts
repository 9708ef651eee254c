/**
 * `topwagers instances [--json]`: who uses this database now (issue 47). The live registered processes (servers and
 * CLI commands of this release or later: their release, host, pid, the retention horizons a server answers under),
 * then the connections to this database that belong to none of them: an older release (which registers nothing and
 * cannot read the retention horizons), a CLI of one, or another client. Exit 1 while any such connection is open,
 * so that an upgrade can wait until no older release is left before turning retention on. Read only.
 */
import type { Database } from "../platform/database/database.js";
import {
  type ClientConnection,
  describeConnection,
  type LiveInstance,
  liveInstances,
  unregisteredConnections,
} from "../schema/instance-registry.js";
import { describeHorizon } from "../values/retention-horizon.js";
import { alignColumns } from "./columns.js";
import { isoSeconds, parseCommandOptions, printJson, UsageError, withDatabase } from "./common.js";

export async function instancesCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandOptions(args, { json: { type: "boolean", default: false } });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  await withDatabase((db) => report(db, values.json === true), {
    poolSize: 1,
    create: false,
    migrate: false,
    register: false,
  });
}

async function report(db: Database, json: boolean): Promise<void> {
  const instances = await liveInstances(db.write);
  const others = await unregisteredConnections(db.write, db.connectionIds());
  if (others.length > 0) process.exitCode = 1;
  if (json) {
    printJson({ database: db.name, instances, unregisteredConnections: others });
    return;
  }
  process.stdout.write(instancesTable(instances));
  process.stdout.write(connectionsText(others));
}

function horizonsText(instance: LiveInstance): string {
  if (instance.horizons === undefined) return "-";
  const { wagers, hourly } = instance.horizons;
  const one = (name: string, at: number) => `${name} ${at === 0 ? "none" : describeHorizon(at).slice(0, 10)}`;
  return `${one("wagers", wagers)}, ${one("hourly", hourly)}`;
}

function instancesTable(instances: readonly LiveInstance[]): string {
  if (instances.length === 0) return "No registered instance is alive.\n";
  const rows = [
    ["ID", "ROLE", "RELEASE", "COMMIT", "HOST", "PID", "STARTED", "SEEN", "HORIZONS"],
    ...instances.map((i) => [
      i.id,
      i.role,
      i.release,
      i.commit,
      i.host,
      String(i.pid),
      isoSeconds(i.startedAt),
      isoSeconds(i.seenAt),
      horizonsText(i),
    ]),
  ];
  return alignColumns(rows);
}

function connectionsText(others: readonly ClientConnection[]): string {
  if (others.length === 0) {
    return "Every connection to this database belongs to a registered instance: no older release is connected.\n";
  }
  return (
    `${others.length} connection(s) to this database belong to no registered instance (an older release, which ` +
    "cannot read the retention horizon, a CLI of one, or another client); retention prunes nothing while one is " +
    `open:\n${others.map((c) => `  ${describeConnection(c)}\n`).join("")}` +
    "(Only connections of this command's database user are seen, unless it has the PROCESS privilege.)\n"
  );
}
