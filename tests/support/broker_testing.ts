// An in-process Broker on a fresh data folder, for tests: `withBroker(env, f)` opens it with
// the settings `env` names (as the environment would), runs `f`, then closes and removes it;
// `replication` makes it a replicated group's master behind that gate.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadBrokerConfig } from "../../runtime/config.ts";
import { Broker, type ReplicationGate } from "../../runtime/broker.ts";
import { NodeFilePort } from "../../storage/node_fs_port.ts";
import { pickPlatform } from "../../runtime/platform/pick.ts";

export async function withBroker(
  env: Record<string, string>,
  f: (broker: Broker) => Promise<void>,
  replication?: ReplicationGate,
  /** The process id message ids carry (brokers of one test that share it make equal ids). */
  pid = 1,
): Promise<void> {
  const platform = await pickPlatform();
  const dataDir = mkdtempSync(`${tmpdir()}/mq-broker-test-`);
  const config = loadBrokerConfig({}, {
    DATA_DIR: dataDir,
    PORT: "0",
    MQ_SEGMENT_ZERO_FILL: "false",
    ...env,
  }, []);
  const broker = await Broker.open({
    config,
    files: new NodeFilePort(),
    nowMs: () => Date.now(),
    log: () => {},
    runtime: "test",
    pid,
    random: () => 0.5,
    bodyText: platform.bodyText,
    openSqlite: platform.openSqlite,
    ...(replication ? { replication } : {}),
  });
  try {
    await f(broker);
  } finally {
    await broker.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
