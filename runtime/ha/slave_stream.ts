// One slave's stream as the master runs it (RocketMQ's HAConnection): where it starts (the
// handshake's plan), what goes next (TRANSFER within the in-flight window, HEARTBEAT when
// idle), and whether it counts as in sync. The master (replication_master.ts) owns the links.
import type { MessageStore, StoreLog } from "../../storage/message_store.ts";
import { type EpochFile, findConsistentPoint } from "../../storage/ha/epoch_file.ts";
import type { HandshakeFrame, HandshakeReplyFrame } from "./frames.ts";
import type { ReplicationConfig } from "./replication_config.ts";
import { ReplicationError } from "./replication_errors.ts";
import type { SlaveLink } from "./slave_link.ts";

/** What a slave's stream reads of its master. */
export interface StreamSource {
  readonly epoch: number;
  readonly config: ReplicationConfig;
  readonly store: MessageStore;
  readonly epochs: EpochFile;
  /** Monotonic clock, ms. */
  readonly nowMs: () => number;
  readonly log: StoreLog;
  /** Started, not stopped. */
  running(): boolean;
  /** The least offset the master and every in-sync slave hold. */
  confirmOffset(): number;
}

/** Where a slave starts: see HandshakeStatus in frames.ts. */
export function planHandshake(m: StreamSource, hs: HandshakeFrame): HandshakeReplyFrame {
  const store = m.store;
  const min = store.minPhysicalOffset, max = store.maxPhysicalOffset;
  const reply = (status: HandshakeReplyFrame["status"], truncateOffset = 0, startOffset = 0) => ({
    type: "HANDSHAKE_REPLY" as const,
    epoch: m.epoch,
    status,
    masterMinOffset: min,
    masterMaxOffset: max,
    truncateOffset,
    startOffset,
  });
  if (hs.minOffset === hs.maxOffset) {
    // An empty slave copies what the master keeps, or only its newest segment (RocketMQ
    // classic mode always does the latter).
    const start = hs.syncFromLastFile ? store.lastSegmentOffset : min;
    return reply("OK", hs.maxOffset, start);
  }
  const point = findConsistentPoint(m.epochs.entries, max, hs.entries, hs.maxOffset);
  if (point < 0) return reply("DIVERGED");
  if (point < min || point < hs.minOffset) return reply("BEHIND");
  return reply("OK", point, point);
}

/** Sends what the slave lacks, within haMaxInFlightBytes of its ack, until the socket fills. */
export function pump(m: StreamSource, s: SlaveLink) {
  if (s.state !== "TRANSFER" || s.waitingDrain || s.link.closed || !m.running()) {
    return;
  }
  const store = m.store;
  const max = store.maxPhysicalOffset;
  while (s.nextOffset < max && s.nextOffset - s.ackedOffset < m.config.haMaxInFlightBytes) {
    const epoch = m.epochs.entryAt(s.nextOffset);
    let chunk;
    try {
      if (!epoch) throw new Error(`no epoch entry covers offset ${s.nextOffset}`);
      chunk = store.readCommitLogBytes(
        s.nextOffset,
        m.config.haTransferBatchSize,
        epoch.endOffset,
      );
    } catch (err) {
      m.log("error", "cannot read the CommitLog for a slave", {
        slave: s.link.address,
        offset: s.nextOffset,
        err: String(err),
      });
      void s.link.close(
        new ReplicationError(
          "LINK_FAILED",
          `Cannot read the CommitLog at ${s.nextOffset} for a slave`,
          {
            cause: err,
          },
        ),
      );
      return;
    }
    if (chunk.nextOffset === s.nextOffset) return;
    s.probe ??= { masterMaxOffset: max, atMs: m.nowMs() };
    const more = s.link.send({
      type: "TRANSFER",
      epoch: m.epoch,
      offset: s.nextOffset,
      dataEpoch: epoch!.entry.epoch,
      dataEpochStart: epoch!.entry.startOffset,
      confirmOffset: m.confirmOffset(),
      body: chunk.bytes,
    });
    s.nextOffset = chunk.nextOffset;
    if (!more) {
      s.waitingDrain = true;
      return;
    }
  }
}

/** Closes the link of a slave silent for haHousekeepingInterval; sends an idle one a
 * HEARTBEAT every haSendHeartbeatInterval. */
export function keepAlive(m: StreamSource, s: SlaveLink, now: number) {
  if (now - s.link.lastReceivedMs > m.config.haHousekeepingInterval) {
    void s.link.close(
      new ReplicationError(
        "PEER_SILENT",
        `Slave ${s.link.address} sent nothing for haHousekeepingInterval ${m.config.haHousekeepingInterval} ms`,
      ),
    );
  } else if (
    s.state === "TRANSFER" && now - s.link.lastSentMs >= m.config.haSendHeartbeatInterval
  ) {
    s.probe ??= { masterMaxOffset: m.store.maxPhysicalOffset, atMs: now };
    s.link.send({
      type: "HEARTBEAT",
      epoch: m.epoch,
      masterMaxOffset: m.store.maxPhysicalOffset,
      confirmOffset: m.confirmOffset(),
    });
  }
}

/** After an ACK: when the slave last held everything the master had (see probe). */
export function noteCaughtUp(m: StreamSource, s: SlaveLink, now: number) {
  if (s.ackedOffset >= m.store.maxPhysicalOffset) {
    s.lastCaughtUpMs = now;
    s.probe = undefined;
  } else if (s.probe && s.ackedOffset >= s.probe.masterMaxOffset) {
    s.lastCaughtUpMs = Math.max(s.lastCaughtUpMs, s.probe.atMs);
    s.probe = undefined;
  }
}

/** In sync now: streaming, gap < haMaxGapNotInSync, caught up within
 * haMaxTimeSlaveNotCatchup, holding the start of this epoch. */
export function linkInSync(m: StreamSource, s: SlaveLink, now: number): boolean {
  return s.state === "TRANSFER" && !s.link.closed &&
    m.store.maxPhysicalOffset - s.ackedOffset < m.config.haMaxGapNotInSync &&
    now - s.lastCaughtUpMs < m.config.haMaxTimeSlaveNotCatchup &&
    s.ackedOffset >= (m.epochs.lastEntry?.startOffset ?? 0);
}
