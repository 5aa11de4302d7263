// The master side of replication (issue #7; reference/rocketmq.md §15): listens for slaves,
// agrees with each on where their logs stop being the same (the epoch files' consistent
// point), tells the slave to cut its log there, and streams its CommitLog from that offset
// in chunks of whole records, each within one segment and one epoch. Slaves acknowledge the
// offset they hold; the master keeps the in-sync set and lets a SYNC producer wait until
// enough replicas hold its message (waitForReplicas).
//
// Epochs are fencing tokens (reference/reliability.md §6.7): every frame carries the
// sender's. A frame with a higher epoch than ours means another master was elected: this
// one is deposed (onDeposed), fails every waiter and stops replicating.
import * as net from "node:net";
import type { MessageStore, StoreLog } from "../../storage/message_store.ts";
import type { EpochFile } from "../../storage/ha/epoch_file.ts";
import type { Frame, HandshakeFrame } from "./frames.ts";
import { FrameLink } from "./replication_link.ts";
import { type ReplicationConfig, replicationConfig } from "./replication_config.ts";
import { ReplicationError } from "./replication_errors.ts";
import { ReplicaWaiters } from "./replica_waiters.ts";
import type { ReplicaInfo, SlaveLink } from "./slave_link.ts";
import {
  keepAlive,
  linkInSync,
  noteCaughtUp,
  planHandshake,
  pump,
  type StreamSource,
} from "./slave_stream.ts";

export type { ReplicaInfo } from "./slave_link.ts";

export interface ReplicationMasterOptions {
  store: MessageStore;
  epochs: EpochFile;
  /** This master's epoch, from the lease. start() records that it begins at the log's end. */
  epoch: number;
  /** Where to listen (haListenPort is the broker port + 1 in RocketMQ; 0 picks a free one). */
  host: string;
  port: number;
  /** Monotonic clock, ms. */
  nowMs: () => number;
  config?: Partial<ReplicationConfig>;
  log?: StoreLog;
  /** A peer showed a higher epoch: another master was elected. Called once. */
  onDeposed?: (epoch: number, peer: string) => void;
}

export class ReplicationMaster {
  readonly epoch: number;
  readonly config: ReplicationConfig;
  readonly #store: MessageStore;
  readonly #epochs: EpochFile;
  readonly #options: ReplicationMasterOptions;
  readonly #nowMs: () => number;
  readonly #log: StoreLog;
  readonly #links = new Set<SlaveLink>();
  #server: net.Server | undefined;
  #port = 0;
  #state: "NEW" | "RUNNING" | "STOPPED" = "NEW";
  #deposedBy = 0;
  readonly #waiters: ReplicaWaiters;
  /** This master as each slave's stream reads it (slave_stream.ts). */
  readonly #source: StreamSource;
  #tick: ReturnType<typeof setInterval> | undefined;
  #unsubscribe: (() => void) | undefined;
  #wakeQueued = false;

  constructor(options: ReplicationMasterOptions) {
    this.#options = options;
    this.epoch = options.epoch;
    this.#store = options.store;
    this.#epochs = options.epochs;
    this.#nowMs = options.nowMs;
    this.#log = options.log ?? (() => {});
    this.config = replicationConfig(options.config, options.store.recordBytesMax);
    this.#waiters = new ReplicaWaiters(options.nowMs, this.#links);
    this.#source = {
      epoch: this.epoch,
      config: this.config,
      store: this.#store,
      epochs: this.#epochs,
      nowMs: this.#nowMs,
      log: this.#log,
      running: () => this.#state === "RUNNING",
      confirmOffset: () => this.confirmOffset,
    };
  }

  get port(): number {
    return this.#port;
  }
  /** The higher epoch that deposed this master, or 0. */
  get deposedBy(): number {
    return this.#deposedBy;
  }

  /**
   * Records where this epoch starts (the epoch file gets (epoch, maxOffset), durably, unless
   * its last entry is this epoch already; an empty file starts at the log's minimum), then
   * listens. The broker must take no puts before this resolves. Throws EPOCH_FENCED when the
   * epoch file already holds a higher epoch.
   */
  async start(): Promise<void> {
    if (this.#state !== "NEW") throw new Error("ReplicationMaster.start() runs once");
    const last = this.#epochs.lastEpoch;
    if (last > this.epoch) {
      throw new ReplicationError(
        "EPOCH_FENCED",
        `Cannot start replicating as master of epoch ${this.epoch}: the epoch file already holds epoch ${last}`,
      );
    }
    if (last < this.epoch) {
      const start = this.#epochs.entries.length === 0
        ? this.#store.minPhysicalOffset
        : this.#store.maxPhysicalOffset;
      await this.#epochs.append(this.epoch, start);
    }
    const server = net.createServer((socket) => this.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#options.port, this.#options.host, () => resolve());
    });
    server.on("error", (err: Error) => this.#log("error", "replication listener failed", { err }));
    this.#server = server;
    this.#port = (server.address() as net.AddressInfo).port;
    this.#state = "RUNNING";
    this.#unsubscribe = this.#store.onCommitLogWritten(() => this.#wake());
    const tickMs = Math.max(
      10,
      Math.min(this.config.haSendHeartbeatInterval, this.config.haHousekeepingInterval) / 4,
    );
    this.#tick = setInterval(() => this.#housekeep(), tickMs);
  }

  /** Stops listening, closes every link, fails every waiter with REPLICATION_STOPPED. */
  async stop(): Promise<void> {
    if (this.#state === "STOPPED") return;
    const server = this.#server;
    this.#state = "STOPPED";
    clearInterval(this.#tick);
    this.#unsubscribe?.();
    this.#waiters.failAll(
      new ReplicationError(
        "REPLICATION_STOPPED",
        "Cannot confirm replication as the master stopped",
      ),
    );
    await Promise.all([...this.#links].map((s) => s.link.close()));
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  replicas(): ReplicaInfo[] {
    const now = this.#nowMs();
    return [...this.#links].filter((s) => s.brokerId >= 0).map((s) => ({
      brokerId: s.brokerId,
      address: s.link.address,
      state: s.state,
      ackedOffset: s.ackedOffset,
      nextOffset: s.nextOffset,
      inSync: linkInSync(this.#source, s, now),
      lastCaughtUpMs: s.lastCaughtUpMs,
    }));
  }

  /** Slaves in sync now: connected, gap < haMaxGapNotInSync, caught up recently, holding
   * the start of this epoch. The master itself is not counted. */
  inSyncSlaveCount(): number {
    const now = this.#nowMs();
    let n = 0;
    for (const s of this.#links) if (linkInSync(this.#source, s, now)) n++;
    return n;
  }

  /** The least offset held by the master and every in-sync slave (RocketMQ's confirmOffset). */
  get confirmOffset(): number {
    const now = this.#nowMs();
    let confirm = this.#store.maxPhysicalOffset;
    for (const s of this.#links) {
      if (linkInSync(this.#source, s, now)) confirm = Math.min(confirm, s.ackedOffset);
    }
    return confirm;
  }

  /**
   * Resolves once `replicas` replicas hold the log below `offset`, the master counting as one
   * (its own durability is the put's business): replicas <= 1 resolves at once. Rejects with
   * SLAVE_NOT_AVAILABLE when fewer slaves are in sync than needed and not enough hold the
   * offset already; with FLUSH_SLAVE_TIMEOUT when `timeoutMs` passes first; with
   * MASTER_DEPOSED or REPLICATION_STOPPED when this master can no longer confirm anything.
   */
  waitForReplicas(offset: number, replicas: number, timeoutMs: number): Promise<void> {
    if (this.#deposedBy > 0) return Promise.reject(this.#deposedError());
    if (this.#state !== "RUNNING") {
      return Promise.reject(
        new ReplicationError(
          "REPLICATION_STOPPED",
          "Cannot confirm replication as the master is not running",
        ),
      );
    }
    const slavesNeeded = replicas - 1;
    if (slavesNeeded <= 0 || this.#waiters.holders(offset) >= slavesNeeded) {
      return Promise.resolve();
    }
    const inSync = this.inSyncSlaveCount();
    if (inSync < slavesNeeded) {
      return Promise.reject(
        new ReplicationError(
          "SLAVE_NOT_AVAILABLE",
          `Cannot replicate offset ${offset} to ${replicas} replicas as only ${inSync} slaves are in sync`,
        ),
      );
    }
    return this.#waiters.wait(offset, slavesNeeded, timeoutMs);
  }

  // ---- links ----

  #accept(socket: net.Socket) {
    if (
      this.#state !== "RUNNING" || this.#deposedBy > 0 ||
      this.#links.size >= this.config.haSlavesMax
    ) {
      if (this.#links.size >= this.config.haSlavesMax) {
        this.#log("warn", "replication connection refused: haSlavesMax reached", {
          haSlavesMax: this.config.haSlavesMax,
        });
      }
      socket.on("error", () => {});
      socket.destroy();
      return;
    }
    const s: SlaveLink = {
      link: undefined as unknown as FrameLink,
      state: "HANDSHAKE",
      brokerId: -1,
      startOffset: 0,
      ackedOffset: -1,
      nextOffset: 0,
      lastCaughtUpMs: -Infinity,
      probe: undefined,
      waitingDrain: false,
    };
    s.link = new FrameLink(socket, {
      frameBytesMax: this.config.haFrameBytesMax,
      nowMs: this.#nowMs,
      handlers: {
        onFrame: (frame) => this.#onFrame(s, frame),
        onClose: (error) => {
          this.#links.delete(s);
          if (error) {
            this.#log("warn", "replication link closed", {
              slave: s.link.address,
              err: error.message,
            });
          }
        },
        onDrain: () => {
          s.waitingDrain = false;
          pump(this.#source, s);
        },
      },
    });
    this.#links.add(s);
  }

  #onFrame(s: SlaveLink, frame: Frame) {
    if (frame.epoch > this.epoch) return this.#depose(frame.epoch, s.link.address);
    const violation = (why: string) =>
      new ReplicationError("PROTOCOL_VIOLATION", `Slave ${s.link.address} ${why}`);
    if (frame.type === "HANDSHAKE") {
      if (s.state !== "HANDSHAKE") throw violation("sent a second HANDSHAKE");
      return this.#handshake(s, frame);
    }
    if (frame.type !== "ACK") {
      throw violation(`sent a ${frame.type} frame, which only a master sends`);
    }
    if (frame.epoch !== this.epoch) {
      throw violation(`acknowledged with epoch ${frame.epoch}, not this master's ${this.epoch}`);
    }
    const now = this.#nowMs();
    if (s.state === "AWAIT_ACK") {
      if (frame.maxOffset !== s.startOffset) {
        throw violation(`holds ${frame.maxOffset} after the handshake, not ${s.startOffset}`);
      }
      s.state = "TRANSFER";
      s.ackedOffset = s.nextOffset = s.startOffset;
    } else if (s.state === "TRANSFER") {
      if (frame.maxOffset < s.ackedOffset || frame.maxOffset > s.nextOffset) {
        throw violation(
          `acknowledged ${frame.maxOffset} outside [${s.ackedOffset}, ${s.nextOffset}] (acked, sent)`,
        );
      }
      s.ackedOffset = frame.maxOffset;
    } else {
      throw violation(`sent an ACK before the handshake ended`);
    }
    noteCaughtUp(this.#source, s, now);
    this.#waiters.settle();
    pump(this.#source, s);
  }

  #handshake(s: SlaveLink, hs: HandshakeFrame) {
    for (const other of this.#links) {
      if (other !== s && other.brokerId === hs.brokerId) {
        // The same slave again (it restarted or lost the old link): one link per broker.
        void other.link.close(
          new ReplicationError(
            "LINK_FAILED",
            `Slave ${hs.brokerId} connected again from ${s.link.address}`,
          ),
        );
      }
    }
    s.brokerId = hs.brokerId;
    const reply = planHandshake(this.#source, hs);
    s.link.send(reply);
    if (reply.status !== "OK") {
      this.#log("warn", "slave shares no usable history; it must resync", {
        slave: s.link.address,
        status: reply.status,
        slaveMax: hs.maxOffset,
      });
      s.state = "REFUSED";
      return;
    }
    s.startOffset = reply.startOffset;
    s.state = "AWAIT_ACK";
  }

  /** New bytes were written: feed every slave, once per turn however many writes. */
  #wake() {
    if (this.#wakeQueued) return;
    this.#wakeQueued = true;
    queueMicrotask(() => {
      this.#wakeQueued = false;
      for (const s of this.#links) pump(this.#source, s);
    });
  }

  #housekeep() {
    const now = this.#nowMs();
    for (const s of this.#links) {
      keepAlive(this.#source, s, now);
      pump(this.#source, s);
    }
  }

  #depose(epoch: number, peer: string) {
    if (this.#deposedBy > 0) return;
    this.#deposedBy = epoch;
    this.#log("warn", "replication master deposed: a peer holds a higher epoch", {
      epoch: this.epoch,
      higher: epoch,
      peer,
    });
    this.#waiters.failAll(this.#deposedError());
    for (const s of this.#links) {
      void s.link.close(
        new ReplicationError("EPOCH_FENCED", `Peer ${peer} holds epoch ${epoch} > ${this.epoch}`),
      );
    }
    this.#options.onDeposed?.(epoch, peer);
  }

  #deposedError(): ReplicationError {
    return new ReplicationError(
      "MASTER_DEPOSED",
      `Cannot confirm replication as master of epoch ${this.epoch}: a peer holds epoch ${this.#deposedBy}`,
    );
  }
}
