// The slave side of replication (issue #7; reference/rocketmq.md §15, AutoSwitchHAClient):
// connects to the master, handshakes with its epoch entries and log bounds, cuts its log
// where the master says the two stop agreeing, then appends each TRANSFER at the same
// physical offset through MessageStore.appendReplicated (which verifies every record and
// dispatches it to ConsumeQueues and index), and acknowledges the offset it holds: after
// each applied chunk (once durable under SYNC_FLUSH) and at least every heartbeat interval.
//
// Fencing: the slave remembers the highest epoch it has seen (its epoch file's, fence(),
// each master's) and refuses any frame of a lower one, so a deposed master can neither feed
// it nor count it towards a SYNC write. On any failure the link is closed and the slave
// reconnects with a doubling delay; setMaster() re-points it at once.
import * as net from "node:net";
import type { MessageStore, StoreLog } from "../../storage/message_store.ts";
import type { EpochFile } from "../../storage/ha/epoch_file.ts";
import { HA_PROTOCOL_VERSION, type HandshakeReplyFrame, type TransferFrame } from "./frames.ts";
import type { Frame } from "./frames.ts";
import { FrameLink } from "./replication_link.ts";
import { type ReplicationConfig, replicationConfig } from "./replication_config.ts";
import { ReplicationError } from "./replication_errors.ts";
import type { MasterAddress, ReplicationSlaveOptions, SlaveState } from "./slave_options.ts";
import { applyError, checkTransfer, fencedError } from "./slave_checks.ts";
import { WakeableSleep } from "./wakeable_sleep.ts";

export type { MasterAddress, ReplicationSlaveOptions, SlaveState } from "./slave_options.ts";

export class ReplicationSlave {
  readonly brokerId: number;
  readonly config: ReplicationConfig;
  readonly #store: MessageStore;
  readonly #epochs: EpochFile;
  readonly #options: ReplicationSlaveOptions;
  readonly #nowMs: () => number;
  readonly #log: StoreLog;
  #master: MasterAddress;
  #state: SlaveState = "IDLE";
  #highestEpoch: number;
  #masterEpoch = 0;
  #masterMaxOffset = 0;
  #masterConfirmOffset = 0;
  #link: FrameLink | undefined;
  #loop: Promise<void> | undefined;
  #stopped = false;
  #skipDelay = false;
  /** The reconnect delay; setMaster() and stop() cut it short. */
  readonly #delay = new WakeableSleep();
  /** Store work of the session, in frame order (appends are written before each step ends). */
  #work: Promise<void> = Promise.resolve();
  #queuedBytes = 0;
  #heldOffset = 0;
  #expectOffset = 0;
  #ackQueued = false;
  #sessionReachedTransfer = false;
  /** Frames still queued are dropped, not applied: their master was fenced, or applying
   * failed. Otherwise what arrived before a link broke is good and is applied. */
  #discardQueued = false;
  lastError: ReplicationError | undefined;
  /** Message of the last failure logged at warn, until a session streams again. */
  #streakError: string | undefined;

  constructor(options: ReplicationSlaveOptions) {
    if (
      !Number.isInteger(options.brokerId) || options.brokerId < 0 || options.brokerId > 0xffffffff
    ) {
      throw new RangeError(`Bad brokerId ${options.brokerId}: an integer 0..2^32-1`);
    }
    this.#options = options;
    this.brokerId = options.brokerId;
    this.#store = options.store;
    this.#epochs = options.epochs;
    this.#nowMs = options.nowMs;
    this.#log = options.log ?? (() => {});
    this.#master = options.master;
    this.#highestEpoch = Math.max(options.fenceEpoch ?? 0, options.epochs.lastEpoch);
    this.config = replicationConfig(options.config, options.store.recordBytesMax);
  }

  get state(): SlaveState {
    return this.#state;
  }
  /** Highest epoch seen: frames below it are refused. */
  get highestEpoch(): number {
    return this.#highestEpoch;
  }
  /** Offset below which this slave holds the master's log, as last acknowledged. */
  get heldOffset(): number {
    return this.#heldOffset;
  }
  /** The master's end and confirm offset as last reported (TRANSFER or HEARTBEAT). */
  get masterMaxOffset(): number {
    return this.#masterMaxOffset;
  }
  get masterConfirmOffset(): number {
    return this.#masterConfirmOffset;
  }
  get master(): MasterAddress {
    return this.#master;
  }

  /** Starts connecting; sessions follow one another until stop(). */
  start(): void {
    if (this.#loop) throw new Error("ReplicationSlave.start() runs once");
    this.#loop = this.#run();
  }

  /** Refuses, from now on, frames of epochs below `epoch` (the lease's current epoch). */
  fence(epoch: number): void {
    if (epoch <= this.#highestEpoch) return;
    this.#highestEpoch = epoch;
    if (this.#link && this.#masterEpoch > 0 && this.#masterEpoch < epoch) {
      this.#discardQueued = true;
      void this.#link.close(fencedError(this.#masterEpoch, "its master", this.#highestEpoch));
    }
  }

  /** Replicates from another master from now on: the current link closes, a new one opens. */
  setMaster(master: MasterAddress): void {
    this.#master = master;
    this.#skipDelay = true;
    void this.#link?.close();
    this.#delay.wake();
  }

  /** Closes the link, ends the loop and waits for store work in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#delay.wake();
    await this.#link?.close();
    await this.#loop;
    await this.#work;
    this.#state = "STOPPED";
  }

  async #run() {
    let delayMs = this.config.haReconnectDelayMsMin;
    while (!this.#stopped) {
      const reachedTransfer = await this.#session();
      if (this.#stopped) break;
      // A new master (setMaster) starts the backoff over: it may take a moment to listen.
      if (reachedTransfer || this.#skipDelay) delayMs = this.config.haReconnectDelayMsMin;
      if (!this.#skipDelay) await this.#delay.sleep(delayMs);
      this.#skipDelay = false;
      delayMs = Math.min(delayMs * 2, this.config.haReconnectDelayMsMax);
    }
  }

  /** One connection, from connect to close. Resolves whether it got as far as TRANSFER. */
  async #session(): Promise<boolean> {
    const { host, port } = this.#master;
    this.#state = "CONNECTING";
    this.#masterEpoch = 0;
    this.#queuedBytes = 0;
    this.#sessionReachedTransfer = false;
    this.#discardQueued = false;
    const socket = net.connect({ host, port });
    const closed = new Promise<ReplicationError | undefined>((resolve) => {
      this.#link = new FrameLink(socket, {
        frameBytesMax: this.config.haFrameBytesMax,
        nowMs: this.#nowMs,
        label: `${host}:${port}`,
        handlers: {
          onFrame: (frame) => this.#onFrame(frame),
          onClose: resolve,
        },
      });
    });
    const link = this.#link!;
    socket.once("connect", () => {
      this.#state = "HANDSHAKE";
      link.send({
        type: "HANDSHAKE",
        epoch: this.#highestEpoch,
        version: HA_PROTOCOL_VERSION,
        syncFromLastFile: this.#options.syncFromLastFile ?? false,
        brokerId: this.brokerId,
        minOffset: this.#store.minPhysicalOffset,
        maxOffset: this.#store.maxPhysicalOffset,
        entries: [...this.#epochs.entries],
      });
    });
    const startedMs = this.#nowMs();
    const tick = setInterval(
      () => this.#housekeep(link, startedMs),
      Math.max(
        10,
        Math.min(this.config.haSendHeartbeatInterval, this.config.haConnectTimeoutMs) / 4,
      ),
    );
    const error = await closed;
    clearInterval(tick);
    await this.#work; // nothing of this session may touch the store during the next
    this.#link = undefined;
    this.#state = this.#stopped ? "STOPPED" : "IDLE";
    if (this.#sessionReachedTransfer) this.#streakError = undefined;
    if (error && !this.#stopped) {
      // The first failure of a streak is logged; its repeats (a master down, retried every
      // few hundred ms) are not, until a session streams again. lastError has the latest.
      if (this.#streakError !== error.message) {
        this.#log("warn", "replication session ended", {
          master: link.address,
          err: error.message,
        });
      }
      this.#streakError = error.message;
      this.lastError = error;
      this.#options.onError?.(error);
    }
    return this.#sessionReachedTransfer;
  }

  #housekeep(link: FrameLink, startedMs: number) {
    const now = this.#nowMs();
    if (this.#state !== "TRANSFER" && now - startedMs > this.config.haConnectTimeoutMs) {
      void link.close(
        new ReplicationError(
          "LINK_FAILED",
          `Cannot replicate from ${link.address}: no handshake within haConnectTimeoutMs ${this.config.haConnectTimeoutMs} ms`,
        ),
      );
    } else if (now - link.lastReceivedMs > this.config.haHousekeepingInterval) {
      void link.close(
        new ReplicationError(
          "PEER_SILENT",
          `Master ${link.address} sent nothing for haHousekeepingInterval ${this.config.haHousekeepingInterval} ms`,
        ),
      );
    } else if (
      this.#state === "TRANSFER" && now - link.lastSentMs >= this.config.haSendHeartbeatInterval
    ) {
      this.#sendAck();
    }
  }

  #onFrame(frame: Frame) {
    const link = this.#link!;
    if (frame.epoch < this.#highestEpoch) {
      this.#discardQueued = true;
      throw fencedError(frame.epoch, link.address, this.#highestEpoch);
    }
    const violation = (why: string) =>
      new ReplicationError("PROTOCOL_VIOLATION", `Master ${link.address} ${why}`);
    if (frame.type === "HANDSHAKE_REPLY") {
      if (this.#state !== "HANDSHAKE" || this.#masterEpoch !== 0) {
        throw violation("sent a HANDSHAKE_REPLY out of place");
      }
      this.#highestEpoch = this.#masterEpoch = frame.epoch;
      this.#masterMaxOffset = frame.masterMaxOffset;
      return this.#enqueue(link, () => this.#applyReply(link, frame));
    }
    if (frame.epoch !== this.#masterEpoch) {
      throw violation(`changed epoch from ${this.#masterEpoch} to ${frame.epoch} on one link`);
    }
    if (frame.type === "HEARTBEAT") {
      this.#masterMaxOffset = frame.masterMaxOffset;
      this.#masterConfirmOffset = frame.confirmOffset;
      return;
    }
    if (frame.type !== "TRANSFER") {
      throw violation(`sent a ${frame.type} frame, which only a slave sends`);
    }
    if (this.#state !== "TRANSFER") throw violation("sent a TRANSFER before the handshake ended");
    this.#queuedBytes += frame.body.length;
    if (this.#queuedBytes > 2 * this.config.haMaxInFlightBytes) {
      throw violation(`sent ${this.#queuedBytes} bytes ahead of what this slave applied`);
    }
    this.#masterMaxOffset = Math.max(this.#masterMaxOffset, frame.offset + frame.body.length);
    this.#masterConfirmOffset = frame.confirmOffset;
    this.#enqueue(link, () => this.#applyTransfer(link, frame));
  }

  /** Runs store work in frame order; a failure closes the link with it as the reason. */
  #enqueue(link: FrameLink, step: () => Promise<void> | void) {
    this.#work = this.#work.then(() => this.#discardQueued ? undefined : step()).catch((err) => {
      this.#failApply(link, err);
    });
  }

  #failApply(link: FrameLink, err: unknown) {
    this.#discardQueued = true;
    void link.close(applyError(err, link.address));
  }

  async #applyReply(link: FrameLink, reply: HandshakeReplyFrame) {
    const store = this.#store;
    if (reply.status !== "OK") {
      if (!this.#options.resyncWhenDiverged) {
        throw new ReplicationError(
          "REPLICA_DIVERGED",
          `Cannot replicate from ${link.address}: the logs share no history the master keeps (${reply.status}; local [${store.minPhysicalOffset}, ${store.maxPhysicalOffset}), master [${reply.masterMinOffset}, ${reply.masterMaxOffset})) and resyncWhenDiverged is off`,
        );
      }
      this.#log("warn", "replica shares no history with its master: dropping the local log", {
        master: link.address,
        status: reply.status,
      });
      await store.truncateCommitLogTo(store.minPhysicalOffset);
      await this.#epochs.clear();
      this.#skipDelay = true;
      this.#discardQueued = true;
      await link.close();
      return;
    }
    const empty = store.minPhysicalOffset === store.maxPhysicalOffset;
    if (empty) {
      await this.#epochs.clear();
      this.#heldOffset = reply.startOffset;
    } else {
      const max = store.maxPhysicalOffset;
      if (reply.truncateOffset > max || reply.startOffset !== reply.truncateOffset) {
        throw new ReplicationError(
          "PROTOCOL_VIOLATION",
          `Master ${link.address} asked to truncate to ${reply.truncateOffset} and start at ${reply.startOffset} with the log ending at ${max}`,
        );
      }
      if (reply.truncateOffset < max) {
        this.#log("warn", "replica truncates a tail its master does not have", {
          master: link.address,
          from: reply.truncateOffset,
          to: max,
        });
        await store.truncateCommitLogTo(reply.truncateOffset);
      }
      await this.#epochs.truncateFrom(reply.truncateOffset);
      // Acknowledge only what is durable: a record written before a lost link may not be.
      await store.durable();
      if (!store.writable) {
        throw new ReplicationError("REPLICA_APPLY_FAILED", "The local store is not writable");
      }
      this.#heldOffset = reply.truncateOffset;
    }
    this.#expectOffset = this.#heldOffset;
    this.#state = "TRANSFER";
    this.#sessionReachedTransfer = true;
    this.#sendAck();
  }

  async #applyTransfer(link: FrameLink, t: TransferFrame) {
    this.#queuedBytes -= t.body.length;
    if (checkTransfer(t, this.#expectOffset, this.#epochs.lastEntry, link.address)) {
      await this.#epochs.append(t.dataEpoch, t.dataEpochStart);
    }
    const appended = this.#store.appendReplicated(t.offset, t.body);
    this.#expectOffset = this.#store.maxPhysicalOffset;
    appended.then(
      (r) => {
        this.#heldOffset = Math.max(this.#heldOffset, r.toOffset);
        this.#sendAckSoon(link);
      },
      (err) => this.#failApply(link, err),
    );
  }

  #sendAckSoon(link: FrameLink) {
    if (this.#ackQueued) return;
    this.#ackQueued = true;
    queueMicrotask(() => {
      this.#ackQueued = false;
      if (this.#link === link) this.#sendAck();
    });
  }

  #sendAck() {
    if (this.#state !== "TRANSFER") return;
    this.#link?.send({ type: "ACK", epoch: this.#masterEpoch, maxOffset: this.#heldOffset });
  }
}
