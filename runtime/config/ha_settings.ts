// Settings of replication and leadership (runtime/ha/): a broker group of one master and
// its slaves, the lease in KV that says who leads, and the replication stream.
import { choiceSetting, intSetting, textSetting } from "../protocol/setting.ts";

export const HA_SETTINGS = [
  choiceSetting("haMode", "MQ_HA_MODE", ["none", "cluster"], {
    default: "none",
    doc:
      "none: a broker on its own. cluster: one replica of the group brokerName, master or slave by the lease in KV (kvPath must then be a KV Connect URL or etcd:// endpoints shared by all).",
  }),
  intSetting("brokerId", "MQ_BROKER_ID", {
    default: 0,
    doc: "Replica id, unique within the group.",
    rocketmq: "brokerId",
  }),
  textSetting("haHost", "MQ_HA_HOST", {
    default: "127.0.0.1",
    doc: "Replication listen address (TCP).",
  }),
  intSetting("haPort", "MQ_HA_PORT", {
    default: 0,
    max: 65535,
    doc: "Replication port (0 picks a free port).",
    rocketmq: "haListenPort",
  }),
  textSetting("haAdvertisedHost", "MQ_HA_ADVERTISED_HOST", {
    default: "",
    defaultText: "haHost",
    doc: "Host peers reach this broker's replication port at.",
  }),
  choiceSetting("replicationMode", "MQ_REPLICATION_MODE", ["ASYNC", "SYNC"], {
    default: "ASYNC",
    doc: "ASYNC: answer after local durability. SYNC: answer after inSyncReplicas hold it.",
    rocketmq: "brokerRole (ASYNC_MASTER, SYNC_MASTER)",
  }),
  intSetting("inSyncReplicas", "MQ_IN_SYNC_REPLICAS", {
    unit: "count",
    default: 2,
    min: 1,
    why: "the master counts as one",
    doc: "Replicas, the master included, that must hold a message before a SYNC answer.",
    rocketmq: "inSyncReplicas",
  }),
  intSetting("leaseTtlMs", "MQ_LEASE_TTL_MS", {
    unit: "ms",
    default: 10_000,
    min: 1,
    doc: "Leadership lease TTL (runtime/ha/lease_rules.ts).",
  }),
  intSetting("leaseSafetyMarginMs", "MQ_LEASE_MARGIN_MS", {
    unit: "ms",
    default: 2000,
    doc: "Clock-skew margin: a master steps down this long before its lease ends.",
  }),
  intSetting("haSlaveTimeoutMs", "MQ_HA_SLAVE_TIMEOUT_MS", {
    unit: "ms",
    default: 3000,
    min: 1,
    doc: "Longest a SYNC produce waits for replicas, then 504 replication-timeout.",
    rocketmq: "slaveTimeout",
  }),
  intSetting("haHeartbeatIntervalMs", "MQ_HA_HEARTBEAT_MS", {
    unit: "ms",
    default: 5000,
    min: 1,
    doc: "Replication heartbeat when idle.",
    rocketmq: "haSendHeartbeatInterval",
  }),
  intSetting("haHousekeepingIntervalMs", "MQ_HA_HOUSEKEEPING_MS", {
    unit: "ms",
    default: 20_000,
    min: 1,
    doc: "A replication peer silent this long is dropped.",
    rocketmq: "haHousekeepingInterval",
  }),
  intSetting("haMaxGapNotInSync", "MQ_HA_MAX_GAP", {
    unit: "bytes",
    default: 256 * 1024 * 1024,
    defaultText: "268435456 (256 MiB)",
    doc: "A slave further behind than this is out of sync.",
    rocketmq: "haMaxGapNotInSync",
  }),
  intSetting("haMetadataSyncIntervalMs", "MQ_HA_METADATA_SYNC_MS", {
    unit: "ms",
    default: 3000,
    min: 1,
    doc: "Slaves copy topics, groups, offsets and subscriptions from the master this often.",
    rocketmq: "SlaveSynchronize period",
  }),
] as const;
