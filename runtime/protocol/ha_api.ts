// What the HTTP front end needs from a replica of a broker group (runtime/ha/node.ts):
// who leads, for clients and test harnesses, and the metadata a slave copies from its
// master. Pure types: functions/ serves both routes without importing runtime/ha.

/** Where a slave fetches its master's metadata (GET, admin rights when keys are set). */
export const METADATA_SNAPSHOT_PATH = "/v1/internal/ha/metadata";

/** Who leads the group: open to anyone, as it holds no secrets. */
export const HA_STATUS_PATH = "/v1/ha/status";

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

export interface HaApi {
  status(): HaStatus;
  /** The master's metadata as JSON bytes; refused with NOT_LEADER on a slave. */
  metadataSnapshot(): Promise<Uint8Array>;
}
