// Transactional messages (RocketMQ's TransactionalMessageService + EndTransactionProcessor;
// reference/rocketmq.md §16, docs/transactions.md). begin stores a half message; end
// commits (the real message, then an op record) or rolls back (the op record); get reads
// the state. Undecided transactions are tracked in memory (`pending`), rebuilt at start
// from the half queue after the check offset; decided ones are read back from the op topic
// through the index (transaction_log.ts), so no state lives outside the CommitLog.
import type { MessageStore } from "../../storage/message_store.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import { TRANS_HALF_TOPIC } from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkGroup } from "../protocol/names.ts";
import type { ProduceMessage } from "../protocol/types.ts";
import type {
  TransactionBegun,
  TransactionCheck,
  TransactionDecision,
  TransactionView,
} from "../protocol/transaction_types.ts";
import type { BodyText } from "../platform/platform.ts";
import type { Logger } from "../log.ts";
import type { MessageIdGenerator } from "../message_id.ts";
import { toWireMessage } from "../wire.ts";
import type { Producer } from "./producer.ts";
import {
  commitInput,
  commitWasPut,
  findHalf,
  findOp,
  halfProperties,
  type OpDecision,
  opInput,
  pendingFromHalf,
  type PendingTx,
  recheckInput,
  viewFromOp,
} from "./transaction_log.ts";
import { LOOPBACK } from "./store_host.ts";
import { checkId, pendingView, sameOrConflict } from "./transaction_views.ts";

/** RocketMQ's check group: its offset in the half queue is the check offset. */
export const TRANS_CHECK_GROUP = "CID_SYS_RMQ_TRANS";

export interface TransactionSettings {
  transactionTimeoutMs: number;
  transactionCheckIntervalMs: number;
  transactionDecisionsCachedMax: number;
  transactionHalfCacheBytesMax: number;
  transactionFault: "none" | "kill-after-commit-put";
}

export interface TransactionDeps {
  store: MessageStore;
  producer: Producer;
  ids: MessageIdGenerator;
  offsets: {
    query(group: string, topic: string, queueId: number): number | undefined;
    commit(group: string, topic: string, queueId: number, offset: number): void;
  };
  settings: TransactionSettings;
  bodyText: BodyText;
  nowMs: () => number;
  log: Logger;
  /** Told when a transaction is decided (the long-poll queue drops its check). */
  onDecided: (tx: PendingTx) => void;
  /** transactionFault only: SIGKILL this process. */
  crash: () => void;
}

const SCAN_BATCH = { maxMsgNums: 256, maxBytes: 4 * 1024 * 1024 };

export class Transactions {
  readonly #d: TransactionDeps;
  /** Undecided transactions by id, in the order they became due (roughly). */
  readonly pending = new Map<string, PendingTx>();
  // Recent decisions in two generations: when the newer holds half the bound, it becomes the
  // older and the oldest go. O(1) per decision (an LRU's delete-first is not, on JSC).
  #decided = new Map<string, TransactionView>();
  #decidedOlder = new Map<string, TransactionView>();
  /** Half-queue offsets below which a put in flight cannot land, by put. */
  readonly #putFloors = new Map<number, number>();
  #putSeq = 0;
  #halfCacheBytes = 0;
  #checkOffsetCommitted = -1;

  constructor(deps: TransactionDeps) {
    this.#d = deps;
  }

  /** Loads the half messages after the check offset (the undecided ones among them are
   * verified against the log when first used). Returns how many were loaded. */
  recover(): number {
    const { store } = this.#d;
    const min = store.getMinOffsetInQueue(TRANS_HALF_TOPIC, 0);
    const max = store.getMaxOffsetInQueue(TRANS_HALF_TOPIC, 0);
    const saved = this.#d.offsets.query(TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, 0) ?? min;
    let offset = Math.min(Math.max(saved, min), max);
    const delays = {
      timeoutMs: this.#d.settings.transactionTimeoutMs,
      intervalMs: this.#d.settings.transactionCheckIntervalMs,
    };
    while (offset < max) {
      const got = store.getMessage(TRANS_HALF_TOPIC, 0, offset, SCAN_BATCH);
      for (const m of got.messages) {
        const tx = pendingFromHalf(m.record, m.queueOffset, delays);
        if (tx === undefined) continue;
        // A later copy (re-put for a check) replaces the earlier, in insertion order too.
        this.pending.delete(tx.transactionId);
        this.pending.set(tx.transactionId, tx);
      }
      if (got.nextBeginOffset <= offset) break;
      offset = got.nextBeginOffset;
    }
    return this.pending.size;
  }

  /** The lowest half-queue offset that may still be undecided: the check offset. */
  checkOffset(): number {
    let low = this.#d.store.getMaxOffsetInQueue(TRANS_HALF_TOPIC, 0);
    for (const floor of this.#putFloors.values()) low = Math.min(low, floor);
    for (const tx of this.pending.values()) low = Math.min(low, tx.halfOffset);
    return low;
  }

  /** Commits the check offset when it moved (a consumer offset, persisted with the others). */
  persistCheckOffset(): void {
    const offset = this.checkOffset();
    if (offset === this.#checkOffsetCommitted) return;
    this.#d.offsets.commit(TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, 0, offset);
    this.#checkOffsetCommitted = offset;
  }

  async begin(
    topic: string,
    message: ProduceMessage,
    producerGroup: string,
  ): Promise<TransactionBegun> {
    checkGroup(producerGroup);
    if (
      message.delayMs !== undefined || message.deliverAt !== undefined ||
      (message.delayLevel ?? 0) > 0 || message.idempotencyKey !== undefined
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot begin a transaction with a delay, a delivery time or an Idempotency-Key: a transactional message is delivered when it is committed",
      );
    }
    const { producer, ids, nowMs } = this.#d;
    const writable = producer.writableTopic(topic);
    const config = writable instanceof Promise ? await writable : writable;
    producer.checkMessage(message);
    const queueId = producer.selectQueue(config, message);
    const transactionId = ids.next();
    const properties = halfProperties(message, transactionId, {
      topic: config.name,
      queueId,
      producerGroup,
    });
    const r = await this.#putHalf({
      topic: TRANS_HALF_TOPIC,
      queueId: 0,
      body: message.body,
      properties,
      bornTimestamp: nowMs(),
      bornHost: LOOPBACK,
    }, (put) => {
      const cache = this.#halfCacheBytes + message.body.length <=
        this.#d.settings.transactionHalfCacheBytesMax;
      if (cache) this.#halfCacheBytes += message.body.length;
      this.pending.set(transactionId, {
        transactionId,
        topic: config.name,
        queueId,
        producerGroup,
        halfOffset: put.queueOffset,
        commitLogOffset: put.commitLogOffset,
        bornTimestamp: put.storeTimestamp,
        checks: 0,
        dueAt: put.storeTimestamp + this.#d.settings.transactionTimeoutMs,
        verified: true,
        checking: false,
        half: cache
          ? {
            body: message.body,
            properties,
            bornTimestamp: put.storeTimestamp,
            physicalOffset: put.commitLogOffset,
          }
          : undefined,
      });
    });
    return {
      transactionId,
      messageId: transactionId,
      topic: config.name,
      queueId,
      queueOffset: -1,
      commitLogOffset: r.commitLogOffset,
      storeTimestamp: r.storeTimestamp,
      durability: r.durability,
    };
  }

  async end(
    transactionId: string,
    decision: TransactionDecision,
    _options: { fromCheck?: boolean } = {},
  ): Promise<TransactionView> {
    checkId(transactionId);
    if (decision !== "COMMIT" && decision !== "ROLLBACK") {
      throw new BrokerError("INVALID_PARAMETER", "A decision is COMMIT or ROLLBACK");
    }
    const tx = this.pending.get(transactionId);
    // The common case, a producer deciding its own fresh transaction, awaits one promise.
    if (tx !== undefined && tx.verified && tx.deciding === undefined) {
      return this.decide(tx, decision).then((v) => sameOrConflict(v, decision));
    }
    const known = tx === undefined ? this.#known(transactionId) : await this.verify(tx);
    if (known !== undefined) return sameOrConflict(known, decision);
    if (tx === undefined) {
      throw new BrokerError("TRANSACTION_NOT_FOUND", `No transaction ${transactionId}`);
    }
    return sameOrConflict(await this.decide(tx, decision), decision);
  }

  async get(transactionId: string): Promise<TransactionView> {
    checkId(transactionId);
    const tx = this.pending.get(transactionId);
    const known = tx === undefined ? this.#known(transactionId) : await this.verify(tx);
    const half = findHalf(this.#d.store, transactionId);
    const message = half && toWireMessage(half, -1, this.#d.bodyText);
    if (known !== undefined) return message ? { ...known, message } : known;
    if (tx === undefined) {
      throw new BrokerError("TRANSACTION_NOT_FOUND", `No transaction ${transactionId}`);
    }
    const view = pendingView(tx);
    return message ? { ...view, message } : view;
  }

  /** For a transaction loaded at start: its decision if the log holds one (an op record,
   * or a commit put without its op, which is completed now), else undefined. */
  async verify(tx: PendingTx): Promise<TransactionView | undefined> {
    if (tx.deciding !== undefined) return await tx.deciding;
    if (tx.verified) return undefined;
    const op = findOp(this.#d.store, tx.transactionId);
    if (op !== undefined) {
      this.pending.delete(tx.transactionId);
      return this.#remember(viewFromOp(op, findHalf(this.#d.store, tx.transactionId)));
    }
    if (commitWasPut(this.#d.store, tx)) {
      this.#d.log("info", "transaction committed before a crash; writing its op record", {
        transactionId: tx.transactionId,
      });
      return await this.decide(tx, "COMMIT", { alreadyPut: true });
    }
    tx.verified = true;
    return undefined;
  }

  /** Writes the decision (commit: the real message first, then the op record). */
  decide(
    tx: PendingTx,
    decision: OpDecision,
    options: { alreadyPut?: boolean } = {},
  ): Promise<TransactionView> {
    if (tx.deciding !== undefined) return tx.deciding;
    const run = async (): Promise<TransactionView> => {
      const { producer, nowMs } = this.#d;
      let op: Promise<{ storeTimestamp: number }>;
      if (decision === "COMMIT" && !options.alreadyPut) {
        // The topic may have been deleted since begin; read-only is fine (a drained group
        // still commits its open transactions: docs/cluster.md).
        await producer.committableTopic(tx.topic);
        const real = producer.putInternal(commitInput(tx.half ?? this.halfRecord(tx), tx));
        if (this.#d.settings.transactionFault === "kill-after-commit-put") {
          await real;
          this.#d.crash();
        }
        // Appended in the same tick, right after the real message: one write. The log
        // keeps a prefix after a crash, so the op never survives without the message; the
        // message without its op is what verify() completes (and the fault above makes).
        op = producer.putInternal(opInput(tx, decision, nowMs()));
        await real;
      } else op = producer.putInternal(opInput(tx, decision, nowMs()));
      const { storeTimestamp } = await op;
      this.pending.delete(tx.transactionId);
      if (tx.half !== undefined) this.#halfCacheBytes -= tx.half.body.length;
      tx.half = undefined;
      this.#d.onDecided(tx);
      return this.#remember({
        ...pendingView(tx),
        state: decision === "COMMIT"
          ? "COMMITTED"
          : decision === "ROLLBACK"
          ? "ROLLED_BACK"
          : "DISCARDED",
        decidedAt: storeTimestamp,
      });
    };
    tx.deciding = run();
    tx.deciding.catch(() => tx.deciding = undefined);
    return tx.deciding;
  }

  /** Re-puts the half message with one more check (before the producer is asked). */
  async recheck(tx: PendingTx): Promise<MessageRecord> {
    const half = this.halfRecord(tx);
    const r = await this.#putHalf(recheckInput(half, tx.checks + 1), (put) => {
      tx.checks++;
      tx.halfOffset = put.queueOffset;
      tx.commitLogOffset = put.commitLogOffset;
      tx.dueAt = put.storeTimestamp + this.#d.settings.transactionCheckIntervalMs;
    });
    return this.#d.store.lookMessageByOffset(r.commitLogOffset) ?? half;
  }

  halfRecord(tx: PendingTx): MessageRecord {
    const record = this.#d.store.lookMessageByOffset(tx.commitLogOffset);
    if (record === undefined) {
      throw new BrokerError(
        "MESSAGE_NOT_FOUND",
        `Cannot read the half message of transaction ${tx.transactionId}: its segment is gone`,
      );
    }
    return record;
  }

  checkOf(tx: PendingTx, half: MessageRecord): TransactionCheck {
    return {
      transactionId: tx.transactionId,
      messageId: tx.transactionId,
      topic: tx.topic,
      queueId: tx.queueId,
      producerGroup: tx.producerGroup,
      check: tx.checks,
      bornTimestamp: half.bornTimestamp,
      message: toWireMessage(half, -1, this.#d.bodyText),
    };
  }

  /** A half put whose offset counts as undecided from before it is appended until
   * `placed` has recorded it. */
  async #putHalf(
    input: Parameters<Producer["putInternal"]>[0],
    placed: (put: { queueOffset: number; commitLogOffset: number; storeTimestamp: number }) => void,
  ) {
    const seq = this.#putSeq++;
    this.#putFloors.set(seq, this.#d.store.getMaxOffsetInQueue(TRANS_HALF_TOPIC, 0));
    try {
      const r = await this.#d.producer.putInternal(input);
      placed(r);
      return r;
    } finally {
      this.#putFloors.delete(seq);
    }
  }

  #known(transactionId: string): TransactionView | undefined {
    const cached = this.#decided.get(transactionId) ?? this.#decidedOlder.get(transactionId);
    if (cached !== undefined) return cached;
    const op = findOp(this.#d.store, transactionId);
    if (op === undefined) return undefined;
    return this.#remember(viewFromOp(op, findHalf(this.#d.store, transactionId)));
  }

  #remember(view: TransactionView): TransactionView {
    this.#decided.set(view.transactionId, view);
    if (this.#decided.size >= Math.max(1, this.#d.settings.transactionDecisionsCachedMax / 2)) {
      this.#decidedOlder = this.#decided;
      this.#decided = new Map();
    }
    return view;
  }
}
