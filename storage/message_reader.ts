// Reads: a page of a queue (RocketMQ's getMessage), a record by CommitLog offset, messages
// by key, a queue offset by time. A record that fails its checks where a ConsumeQueue unit
// points is damage, not retention: it is skipped (the reader gets the records around it, as
// recovery never serves damage either), logged as a CorruptRecordError and counted.
import type { CommitLog } from "./commit_log/commit_log.ts";
import { CQ_UNIT_BYTES, type CqUnit } from "./consume_queue/consume_queue.ts";
import type { StoreConfig } from "./config.ts";
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import { keysOf, tagsCodeOf } from "./dispatch_request.ts";
import { PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY } from "./message/message_const.ts";
import { CorruptRecordError } from "./errors.ts";
import type { IndexService } from "./index/index_service.ts";
import { type MessageRecord, storeTimestampAt } from "./message/record.ts";
import { BODY_CRC_MISMATCH } from "./message/record_decode.ts";
import type { GetMessageResult, MessageFilter, StoredMessage, StoreLog } from "./store_types.ts";

/** Units scanned per message asked for when filtering (RocketMQ: maxMsgNums x 20). */
const FILTER_SCAN_UNITS_PER_MESSAGE = 20;
/** Bytes at a record's start that hold its store timestamp (SYSFLAG at 36; v6 hosts). */
const STORE_TIMESTAMP_HEAD_BYTES = 96;

export interface ReaderParts {
  commitLog: CommitLog;
  consumeQueues: ConsumeQueueStore;
  index: IndexService;
  recordBytesMax: number;
  log: StoreLog;
  /** maxFilterMessageSize: bytes of ConsumeQueue units a filtered pull scans at least. */
  config: Pick<StoreConfig, "maxFilterMessageSize">;
}

export class MessageReader {
  #corruptReads = 0;

  constructor(private readonly parts: ReaderParts) {}

  /** Reads that met a damaged record since the store opened. */
  get corruptReads(): number {
    return this.#corruptReads;
  }

  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    options: { maxMsgNums: number; maxBytes: number; filter?: MessageFilter },
  ): GetMessageResult {
    const cq = this.parts.consumeQueues.find(topic, queueId);
    if (!cq) {
      return {
        status: "NO_MATCHED_LOGIC_QUEUE",
        messages: [],
        nextBeginOffset: 0,
        minOffset: 0,
        maxOffset: 0,
      };
    }
    const minOffset = cq.minOffset, maxOffset = cq.maxOffset;
    const base = { messages: [] as StoredMessage[], minOffset, maxOffset };
    if (maxOffset === 0) return { ...base, status: "NO_MESSAGE_IN_QUEUE", nextBeginOffset: 0 };
    if (offset < minOffset) {
      return { ...base, status: "OFFSET_TOO_SMALL", nextBeginOffset: minOffset };
    }
    if (offset === maxOffset) {
      return { ...base, status: "OFFSET_OVERFLOW_ONE", nextBeginOffset: offset };
    }
    if (offset > maxOffset) {
      return { ...base, status: "OFFSET_OVERFLOW_BADLY", nextBeginOffset: maxOffset };
    }
    const tagCodes = options.filter?.tags
      ? new Set([...options.filter.tags].map(tagsCodeOf))
      : undefined;
    const messages: StoredMessage[] = [];
    let next = offset, bytes = 0;
    // Without a filter every unit is taken, so reading more than maxMsgNums of them is waste.
    const scanMax = tagCodes
      ? Math.max(
        this.parts.config.maxFilterMessageSize / CQ_UNIT_BYTES,
        options.maxMsgNums * FILTER_SCAN_UNITS_PER_MESSAGE,
      )
      : options.maxMsgNums;
    const units = cq.range(offset, scanMax);
    const commitLog = this.parts.commitLog;
    // Without a filter the records to read are known: one buffer holds them all (an
    // ArrayBuffer per record is costly on Deno: bench/README.md). With one, each gets its own.
    let arena: Uint8Array | undefined, arenaAt = 0;
    if (!tagCodes) {
      let total = 0;
      for (const unit of units) {
        if (total > 0 && total + unit.size > options.maxBytes) break;
        total += unit.size;
      }
      arena = new Uint8Array(total);
    }
    for (const unit of units) {
      if (
        messages.length >= options.maxMsgNums ||
        (messages.length > 0 && bytes + unit.size > options.maxBytes)
      ) break;
      next = unit.queueOffset + 1;
      if (tagCodes && !tagCodes.has(unit.tagsCode | 0)) continue;
      const into = arena?.subarray(arenaAt, arenaAt += unit.size) ?? new Uint8Array(unit.size);
      const parsed = commitLog.readRecord(unit.commitLogOffset, unit.size, into);
      if (parsed.kind !== "record") {
        this.#readFailed(
          unit.commitLogOffset,
          parsed.kind === "corrupt" ? parsed.reason : parsed.kind,
        );
        continue;
      }
      // Hash codes can collide: confirm on the record's own tag.
      if (
        options.filter?.tags &&
        !options.filter.tags.has(parsed.record.properties.get(PROPERTY_TAGS) ?? "")
      ) continue;
      messages.push({ queueOffset: unit.queueOffset, record: parsed.record, bytes: into });
      bytes += unit.size;
    }
    const status = messages.length
      ? "FOUND"
      : next > offset
      ? "NO_MATCHED_MESSAGE"
      : "OFFSET_FOUND_NULL";
    return { ...base, status, messages, nextBeginOffset: next };
  }

  /**
   * The record at a CommitLog offset (view by message offset id). The offset may come from
   * outside (a message id), so only a record that is whole but fails its body CRC counts as
   * damage; a stray offset is just not found.
   */
  lookMessageByOffset(commitLogOffset: number): MessageRecord | undefined {
    return this.lookRecord(commitLogOffset)?.record;
  }

  /** As lookMessageByOffset(), with the record's bytes as stored. */
  lookRecord(commitLogOffset: number): { record: MessageRecord; bytes: Uint8Array } | undefined {
    const header = this.parts.commitLog.read(commitLogOffset, 4);
    if (!header) return undefined;
    const size = new DataView(header.buffer, header.byteOffset).getInt32(0);
    if (size <= 0 || size > this.parts.recordBytesMax) return undefined;
    const bytes = new Uint8Array(size);
    const parsed = this.parts.commitLog.readRecord(commitLogOffset, size, bytes);
    if (parsed.kind === "record") return { record: parsed.record, bytes };
    if (parsed.kind === "corrupt" && parsed.reason === BODY_CRC_MISMATCH) {
      this.#readFailed(commitLogOffset, parsed.reason);
    }
    return undefined;
  }

  /** Messages of `topic` whose KEYS hold `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    options: { maxNum: number; beginTimestamp: number; endTimestamp: number },
  ): MessageRecord[] {
    const out: MessageRecord[] = [];
    for (const offset of this.parts.index.queryByKey(topic, key, options)) {
      const record = this.lookMessageByOffset(offset);
      if (!record || record.topic !== topic) continue;
      if (
        record.properties.get(PROPERTY_UNIQ_KEY) === key ||
        keysOf(record.properties.get(PROPERTY_KEYS)).includes(key)
      ) {
        out.push(record);
      }
    }
    return out;
  }

  /** Up to `count` ConsumeQueue units of a queue from `queueOffset` (within one CQ file). */
  queueUnits(topic: string, queueId: number, queueOffset: number, count: number): CqUnit[] {
    return this.parts.consumeQueues.find(topic, queueId)?.range(queueOffset, count) ?? [];
  }

  /** First queue offset stored at or after `timestamp` (SEARCH_OFFSET_BY_TIMESTAMP). */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    const cq = this.parts.consumeQueues.find(topic, queueId);
    if (!cq) return 0;
    return cq.offsetAtTime(timestamp, (unit: CqUnit) => this.#storeTimeOf(unit));
  }

  #storeTimeOf(unit: CqUnit): number | undefined {
    const head = this.parts.commitLog.read(unit.commitLogOffset, STORE_TIMESTAMP_HEAD_BYTES);
    if (!head) return undefined;
    const view = new DataView(head.buffer, head.byteOffset);
    const at = storeTimestampAt(view.getInt32(36));
    return view.getInt32(at) * 2 ** 32 + view.getUint32(at + 4);
  }

  /** A record a ConsumeQueue unit (or index) points to could not be read whole. */
  #readFailed(offset: number, reason: string): void {
    // Retention removed it meanwhile: not damage, and consumers move past it as RocketMQ's do.
    if (offset < this.parts.commitLog.minOffset) return;
    const count = ++this.#corruptReads;
    // Every reader of a damaged record meets it again: log the 1st, 2nd, 4th, 8th… so a busy
    // queue cannot flood the log; the counter (stats().corruptReads) holds every one.
    if ((count & (count - 1)) !== 0) return;
    const err = new CorruptRecordError(offset, reason);
    this.parts.log("error", "read skipped a corrupt record", {
      err: String(err),
      offset,
      reason,
      corruptReads: count,
    });
  }
}
