// What a ReplicationSlave is given (its options, the master's address) and the states it
// reports. A leaf, so the node that builds slaves need not load the slave to name them.
import type { MessageStore, StoreLog } from "../../storage/message_store.ts";
import type { EpochFile } from "../../storage/ha/epoch_file.ts";
import type { ReplicationConfig } from "./replication_config.ts";
import type { ReplicationError } from "./replication_errors.ts";

export interface MasterAddress {
  host: string;
  port: number;
}

export interface ReplicationSlaveOptions {
  store: MessageStore;
  epochs: EpochFile;
  /** RocketMQ's brokerId, 0..2^32-1: the master keeps one link per id. */
  brokerId: number;
  master: MasterAddress;
  /** Monotonic clock, ms. */
  nowMs: () => number;
  config?: Partial<ReplicationConfig>;
  log?: StoreLog;
  /** An empty slave asks for the master's newest segment only (isSyncFromLastFile). false. */
  syncFromLastFile?: boolean;
  /** When the master shares no history with this slave (DIVERGED) or no longer keeps where
   * it stopped (BEHIND): drop the whole local log and copy again. false: refuse, report,
   * retry (an operator decides). */
  resyncWhenDiverged?: boolean;
  /** Highest epoch known at start (the lease's); frames of lower epochs are refused. */
  fenceEpoch?: number;
  /** Each session's failure, as it happens (the slave retries on its own). */
  onError?: (error: ReplicationError) => void;
}

export type SlaveState = "IDLE" | "CONNECTING" | "HANDSHAKE" | "TRANSFER" | "STOPPED";
