// The master's record of one slave connection (SlaveLink) and the view of it that
// replicas() reports (ReplicaInfo). A leaf: the master, its per-slave steps and its
// waiters all read it.
import type { FrameLink } from "./replication_link.ts";

/** The master's view of one slave. */
export interface ReplicaInfo {
  brokerId: number;
  address: string;
  state: SlaveLinkState;
  /** Offset below which the slave holds this master's log (-1 before the handshake). */
  ackedOffset: number;
  /** Next offset to send. */
  nextOffset: number;
  inSync: boolean;
  /** Monotonic ms when the slave last held everything the master had at some send. */
  lastCaughtUpMs: number;
}

export type SlaveLinkState = "HANDSHAKE" | "AWAIT_ACK" | "TRANSFER" | "REFUSED";

export interface SlaveLink {
  link: FrameLink;
  state: SlaveLinkState;
  brokerId: number;
  startOffset: number;
  ackedOffset: number;
  nextOffset: number;
  lastCaughtUpMs: number;
  /** The master's end at a send: once the slave acks past it, it had caught up then. */
  probe: { masterMaxOffset: number; atMs: number } | undefined;
  waitingDrain: boolean;
}
