// HaNode's types: what it is given (HaNodeDeps), what it reports (HaStatus) and the parts
// each role runs. A leaf, so node.ts and the helpers that build those parts share them.
import type { MessageStore } from "../../storage/message_store.ts";
import type { MetadataDbHandle } from "../../storage/metadata/sqlite.ts";
import type { Broker, BrokerDeps } from "../broker.ts";
import type { KvOpenOptions, KvPort } from "../platform/kv_port.ts";
import type { RouteRegistration } from "../route_registry.ts";
import type { LeaseRecord } from "./lease_store.ts";
import type { ReplicationMaster } from "./replication_master.ts";
import type { ReplicationSlave } from "./replication_slave.ts";

/** What a Broker needs (the node starts one per mastership; nowMs is the wall clock),
 * plus the replica's own parts. */
export interface HaNodeDeps extends Omit<BrokerDeps, "store" | "replication"> {
  kv: KvPort;
  /** The platform's: a master's route registration opens a KV of its own. */
  openKv: (pathOrUrl: string, options: KvOpenOptions) => Promise<KvPort>;
  /** host:port clients reach this broker's HTTP API at. */
  httpAddress: string;
  /** host:port of this broker's replication listener (fixed for the process). */
  haAddress: { host: string; port: number };
  /** An auto-picked haAddress port's placeholder listener: released just before the
   * replication listener binds the port, held again once it has closed (none for a
   * configured port). */
  haPortHold?: { release(): Promise<void>; hold(): Promise<void> };
  /** host:port of this broker's RocketMQ remoting port, when it serves one. */
  remotingAddress?: string;
  /** The fetch a slave reaches its master's HTTP API with (trusting brokerCaFile); the
   * global fetch by default. */
  brokerFetch?: typeof fetch;
}

// The status and snapshot the HTTP front end serves (functions/routes/ha.ts).
export { METADATA_SNAPSHOT_PATH } from "../protocol/ha_api.ts";
export type { HaRole, HaStatus } from "../protocol/ha_api.ts";

export interface SlaveParts {
  store: MessageStore;
  db: MetadataDbHandle;
  slave: ReplicationSlave | undefined;
  metadata: { stop(): Promise<void> } | undefined;
  /** Lease record (owner, epoch) the slave follows. */
  following: LeaseRecord | undefined;
}

export interface MasterParts {
  epoch: number;
  broker: Broker;
  master: ReplicationMaster;
  routes: RouteRegistration | undefined;
}
