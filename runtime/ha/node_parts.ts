// How HaNode builds the parts its roles run (node_types.ts): the store, the Broker, the
// replication master or slave, the slave's metadata follower, the route entry, and the
// replication settings. Functions of the deps, so node.ts keeps only the role changes.
import { MessageStore } from "../../storage/message_store.ts";
import { Broker, type ReplicationGate } from "../broker.ts";
import { httpUrlOf, type RouteRegistration, startRouteRegistration } from "../route_registry.ts";
import { LeaseKeeper, type LeaseKeeperOptions } from "./lease.ts";
import type { LeaseStore } from "./lease_store.ts";
import { importMetadata, MetadataFollower } from "./metadata_sync.ts";
import { type HaNodeDeps, METADATA_SNAPSHOT_PATH, type SlaveParts } from "./node_types.ts";
import type { ReplicationConfig } from "./replication_config.ts";
import { ReplicationMaster, type ReplicationMasterOptions } from "./replication_master.ts";
import { ReplicationSlave, type ReplicationSlaveOptions } from "./replication_slave.ts";

/** Opens (recovers) and starts the store in the data folder. */
export async function openStore(d: HaNodeDeps): Promise<MessageStore> {
  const { config, log } = d;
  const store = new MessageStore({
    files: d.files,
    config: config.store,
    nowMs: d.nowMs,
    log,
    diskUsedRatio: d.diskUsedRatio,
  });
  d.files.mkdirp(config.dataDir);
  await store.open();
  store.start();
  return store;
}

/** Copies the master's metadata tables into ours every haMetadataSyncIntervalMs
 * (RocketMQ's SlaveSynchronize); a Broker started here on promotion loads them. */
export function followMetadata(d: HaNodeDeps, s: SlaveParts, http: string): MetadataFollower {
  const { config, log } = d;
  const admin = config.apiKeys.find((k) => k.admin);
  const follower = new MetadataFollower({
    fetchSnapshot: async (signal) => {
      // The group's replicas serve TLS alike: https:// when this one does.
      const res = await (d.brokerFetch ?? fetch)(
        `${httpUrlOf(config, http)}${METADATA_SNAPSHOT_PATH}`,
        {
          headers: admin ? { authorization: `Bearer ${admin.key}` } : {},
          signal: AbortSignal.any([
            signal,
            AbortSignal.timeout(config.haMetadataSyncIntervalMs * 3),
          ]),
        },
      );
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`Master ${http} answered ${res.status} to the metadata fetch`);
      }
      return new Uint8Array(await res.arrayBuffer());
    },
    apply: async (snapshot) => {
      await importMetadata(s.db.db, snapshot);
    },
    intervalMs: config.haMetadataSyncIntervalMs,
    log,
    nowMs: d.nowMs,
  });
  follower.start();
  return follower;
}

/** The replication settings of both roles, from the broker's (and the lease's) settings. */
export function nodeReplicationConfig(d: HaNodeDeps): Partial<ReplicationConfig> {
  const { config } = d;
  return {
    slaveTimeout: config.haSlaveTimeoutMs,
    haSendHeartbeatInterval: config.haHeartbeatIntervalMs,
    haHousekeepingInterval: config.haHousekeepingIntervalMs,
    haMaxGapNotInSync: config.haMaxGapNotInSync,
    // A slave finds a new master within a lease poll or so (RocketMQ retries every 5 s).
    haReconnectDelayMsMax: Math.max(200, Math.min(5000, Math.round(config.leaseTtlMs / 10))),
    haReconnectDelayMsMin: Math.max(20, Math.min(200, Math.round(config.leaseTtlMs / 50))),
  };
}

/** The master's replication for `epoch`; it must start before the Broker can append. */
export function replicationMaster(
  d: HaNodeDeps,
  o: Pick<ReplicationMasterOptions, "store" | "epochs" | "epoch" | "onDeposed">,
): ReplicationMaster {
  const { config, log } = d;
  return new ReplicationMaster({
    store: o.store,
    epochs: o.epochs,
    epoch: o.epoch,
    host: config.haHost,
    port: d.haAddress.port,
    nowMs: () => performance.now(),
    config: nodeReplicationConfig(d),
    log,
    onDeposed: o.onDeposed,
  });
}

/** A Broker over the store the node opened, every client write passing `replication`. */
export function openBroker(
  d: HaNodeDeps,
  store: MessageStore,
  replication: ReplicationGate,
): Promise<Broker> {
  const { config, log } = d;
  return Broker.open({
    config,
    files: d.files,
    nowMs: d.nowMs,
    log,
    runtime: d.runtime,
    pid: d.pid,
    random: d.random,
    diskUsedRatio: d.diskUsedRatio,
    bodyText: d.bodyText,
    openSqlite: d.openSqlite,
    store,
    replication,
  });
}

/** The master's route entry at `epoch`, kept while stillValid(); undefined when it could
 * not be registered (clients then find the master through the lease). */
export function registerRoutes(
  d: HaNodeDeps,
  broker: Broker,
  epoch: number,
  stillValid: () => boolean,
): Promise<RouteRegistration | undefined> {
  const { config, log } = d;
  return startRouteRegistration({
    config,
    address: d.httpAddress,
    remotingAddress: d.remotingAddress,
    broker,
    log,
    nowMs: d.nowMs,
    openKv: d.openKv,
    epoch,
    stillValid,
  }).catch((err) => {
    log("warn", "route registration failed; clients find the master through the lease", {
      err: String(err),
    });
    return undefined;
  });
}

/** A slave of `o.master`, refusing epochs below `o.fenceEpoch`; not started yet. */
export function replicationSlave(
  d: HaNodeDeps,
  o: Pick<ReplicationSlaveOptions, "store" | "epochs" | "master" | "fenceEpoch" | "onError">,
): ReplicationSlave {
  return new ReplicationSlave({
    store: o.store,
    epochs: o.epochs,
    brokerId: d.config.brokerId,
    master: o.master,
    nowMs: () => performance.now(),
    config: nodeReplicationConfig(d),
    log: d.log,
    fenceEpoch: o.fenceEpoch,
    onError: o.onError,
  });
}

/** The keeper of this replica's lease, on the process clocks, with the broker's lease
 * settings; `on` are the node's part in it. */
export function leaseKeeper(
  d: HaNodeDeps,
  address: string,
  store: LeaseStore,
  on: Pick<LeaseKeeperOptions, "eligibility" | "onAcquired" | "onLost">,
): LeaseKeeper {
  const { config } = d;
  return new LeaseKeeper({
    brokerGroup: config.brokerName,
    brokerId: config.brokerId,
    address,
    store,
    clock: {
      monotonicMs: () => performance.now(),
      wallMs: d.nowMs,
      setTimer: (ms, fn) => {
        const t = setTimeout(fn, ms);
        return () => clearTimeout(t);
      },
    },
    eligibility: on.eligibility,
    settings: {
      leaseTtlMs: config.leaseTtlMs,
      leaseSafetyMarginMs: config.leaseSafetyMarginMs,
    },
    onAcquired: on.onAcquired,
    onLost: on.onLost,
    log: d.log,
  });
}
