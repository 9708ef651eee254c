/**
 * A Galera cluster of throwaway MariaDB nodes on loopback (./mariadb-topology.ts): node 1 installed and
 * bootstrapping the cluster, the others joining one at a time by SST (rsync), each waited for until it is
 * Synced. Every process is the topology's, stopped by PID with it.
 */
import { mkdirSync } from "node:fs";
import { type NodeProcess, queryOne, type Topology, until } from "./mariadb-topology.js";
import { freePort } from "./processes.js";

/** Whether `node` is Synced in a cluster of `size` nodes. */
export async function synced(node: NodeProcess, size: number): Promise<boolean> {
  const rows = await queryOne(
    node,
    "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'wsrep_local_state_comment') AS state, (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'wsrep_cluster_size') AS size",
  );
  return rows.state === "Synced" && Number(rows.size) === size;
}

/**
 * Starts `size` Galera nodes named node1… in `cluster` (gcomm, IST and SST on free loopback ports), with
 * `providerOptions` appended to each node's wsrep provider options; resolves once all are Synced. The
 * anonymous user is dropped (so root over TCP is root).
 */
export async function startGaleraCluster(cluster: Topology, size: number, providerOptions = ""): Promise<void> {
  const ports = await Promise.all(
    Array.from({ length: size }, async () => ({ g: await freePort(), i: await freePort(), s: await freePort() })),
  );
  const address = `gcomm://${ports.map((p) => `127.0.0.1:${p.g}`).join(",")}`;
  for (const [index, p] of ports.entries()) {
    const name = `node${index + 1}`;
    if (index === 0) await cluster.install(name);
    else mkdirSync(cluster.dir(name), { recursive: true });
    await cluster.node(name, [
      "--skip-log-bin",
      "--binlog-format=ROW",
      "--default-storage-engine=InnoDB",
      "--innodb-autoinc-lock-mode=2",
      "--wsrep-on=ON",
      "--wsrep-provider=/usr/lib/galera/libgalera_smm.so",
      "--wsrep-cluster-name=topwagers-test",
      `--wsrep-cluster-address=${address}`,
      `--wsrep-node-name=node${index + 1}`,
      `--wsrep-node-address=127.0.0.1:${p.g}`,
      `--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${p.g};ist.recv_addr=127.0.0.1:${p.i};gcache.size=32M;${providerOptions}`,
      "--wsrep-sst-method=rsync",
      `--wsrep-sst-receive-address=127.0.0.1:${p.s}`,
    ]);
  }
  await cluster.giveToMysql();
  const [first, ...joiners] = cluster.nodes;
  if (first === undefined) throw new Error("a Galera cluster needs at least one node");
  await first.start(["--wsrep-new-cluster"]);
  await until("node 1 synced", () => synced(first, 1));
  const admin = await first.admin();
  await admin.query("DROP USER IF EXISTS ''@'localhost'");
  await admin.end();
  for (const [index, joiner] of joiners.entries()) {
    await joiner.start();
    await until(`node ${index + 2} synced`, () => synced(joiner, index + 2), 60_000);
  }
}
