// HaNode's types: what it is given (HaNodeDeps), what it reports (HaStatus) and the parts
// each role runs. A leaf, so node.ts and the helpers that build those parts share them.
import type { MessageStore } from "../../storage/message_store.ts";
import type { MetadataDbHandle } from "../../storage/metadata/sqlite.ts";
import type { Broker, BrokerDeps } from "../broker.ts";
import type { KvPort } from "../kv/kv_port.ts";
import type { RouteRegistration } from "../route_registry.ts";
import type { LeaseRecord } from "./lease_store.ts";
import type { ReplicationMaster } from "./replication_master.ts";
import type { ReplicationSlave } from "./replication_slave.ts";

/** What a Broker needs (the node starts one per mastership; nowMs is the wall clock),
 * plus the replica's own parts. */
export interface HaNodeDeps extends Omit<BrokerDeps, "store" | "replication"> {
  kv: KvPort;
  /** host:port clients reach this broker's HTTP API at. */
  httpAddress: string;
  /** host:port of this broker's replication listener (fixed for the process). */
  haAddress: { host: string; port: number };
}

/** Where a slave fetches its master's metadata (GET, admin rights when keys are set). */
export const METADATA_SNAPSHOT_PATH = "/v1/internal/ha/metadata";

export type HaRole = "starting" | "slave" | "master" | "changing" | "stopped";

export interface HaStatus {
  role: HaRole;
  brokerId: number;
  brokerGroup: string;
  /** Epoch of the lease this replica holds as master, else of the newest record in its log. */
  epoch: number;
  maxOffset: number;
  master: { brokerId: number; httpAddress: string; epoch: number } | null;
  slave?: { state: string; heldOffset: number; masterMaxOffset: number; inSync: boolean };
  replicas?: { brokerId: number; ackedOffset: number; inSync: boolean }[];
}

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
