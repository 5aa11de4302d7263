// The replication data plane (issue #7): a master streams its CommitLog to N slaves over TCP;
// each slave appends at the same offsets, verifies and dispatches, and acknowledges what it
// holds; the master keeps the in-sync set and lets SYNC producers wait for replicas. Roles,
// leases and routes are the broker's (runtime/broker.ts, runtime/ha/lease*.ts).
export {
  type ReplicaInfo,
  ReplicationMaster,
  type ReplicationMasterOptions,
} from "./replication_master.ts";
export {
  type MasterAddress,
  ReplicationSlave,
  type ReplicationSlaveOptions,
  type SlaveState,
} from "./replication_slave.ts";
export { defaultReplicationConfig, type ReplicationConfig } from "./replication_config.ts";
export { ReplicationError, type ReplicationErrorCode } from "./replication_errors.ts";
