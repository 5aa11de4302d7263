// The transactions of one broker, composed: the records and their state (transactions.ts),
// the check service (transaction_check.ts), where checks go (transaction_channels.ts) and
// the long-poll queues (transaction_poll.ts). Implements the core's TransactionApi and the
// TransactionCheckHost front ends register their producer connections with.
import process from "node:process";
import type { MessageStore } from "../../storage/message_store.ts";
import type { BrokerConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import type { BodyText } from "../platform/platform.ts";
import type { MessageIdGenerator } from "../message_id.ts";
import type {
  TransactionApi,
  TransactionCheckChannel,
  TransactionCheckHost,
} from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkGroup } from "../protocol/names.ts";
import { signalOf, type SignalSource } from "../protocol/types.ts";
import type { WebhookEgress } from "../webhook/egress.ts";
import type { Producer } from "./producer.ts";
import { TransactionCheckChannels } from "./transaction_channels.ts";
import { TransactionCheckService } from "./transaction_check.ts";
import { TransactionPollQueues } from "./transaction_poll.ts";
import { type TransactionDeps, Transactions } from "./transactions.ts";

export interface TransactionServiceDeps {
  store: MessageStore;
  producer: Producer;
  ids: MessageIdGenerator;
  offsets: TransactionDeps["offsets"];
  egress: WebhookEgress;
  config: BrokerConfig;
  bodyText: BodyText;
  nowMs: () => number;
  log: Logger;
}

export type TransactionService = TransactionApi & TransactionCheckHost & {
  start(): void;
  stop(): Promise<void>;
  stats(): { pending: number; checksSent: number; discarded: number };
  /** Half messages of `topic` not decided yet (drain status). */
  openHalves(topic: string): number;
};

export function createTransactionService(d: TransactionServiceDeps): TransactionService {
  const { config } = d;
  const polls = new TransactionPollQueues({
    queuedMax: config.transactionChecksQueuedMax,
    waitingMax: config.heldPullsMax,
  });
  const transactions = new Transactions({
    store: d.store,
    producer: d.producer,
    ids: d.ids,
    offsets: d.offsets,
    settings: config,
    bodyText: d.bodyText,
    nowMs: d.nowMs,
    log: d.log,
    onDecided: (tx) => polls.decided(tx.producerGroup, tx.transactionId),
    crash: () => process.kill(process.pid, "SIGKILL"),
  });
  const channels = new TransactionCheckChannels({
    store: d.store,
    put: (input) => d.producer.putInternal(input),
    retentionMs: config.store.fileReservedTime * 3_600_000,
    transport: d.egress.transport,
    checkUrl: (url) => d.egress.checkUrl(url),
    polls,
    nowMs: d.nowMs,
    log: d.log,
    timeoutMs: config.webhookTimeoutMsDefault,
  });
  const checks = new TransactionCheckService({
    transactions,
    send: (check) => channels.send(check),
    onPass: () => channels.refresh(),
    settings: config,
    nowMs: d.nowMs,
    log: d.log,
  });
  return {
    start() {
      const loaded = transactions.recover();
      if (loaded > 0) d.log("info", "transactions to check loaded from the log", { loaded });
      checks.start();
    },
    async stop() {
      polls.close();
      await checks.stop();
      transactions.persistCheckOffset();
    },
    stats: () => ({
      pending: transactions.pending.size,
      checksSent: checks.checksSent,
      discarded: checks.discarded,
    }),
    openHalves(topic) {
      let n = 0;
      for (const tx of transactions.pending.values()) if (tx.topic === topic) n++;
      return n;
    },
    async beginTransaction(topic, message, group) {
      const begun = await transactions.begin(topic, message, group);
      checks.wake(begun.storeTimestamp + config.transactionTimeoutMs);
      return begun;
    },
    endTransaction: (id, decision, options) => transactions.end(id, decision, options),
    getTransaction: (id) => transactions.get(id),
    setTransactionCheck: (group, input) => channels.set(group, input),
    getTransactionCheck: (group) => Promise.resolve().then(() => channels.get(group)),
    deleteTransactionCheck: (group) => channels.delete(group),
    listTransactionChecks: (o) => Promise.resolve(channels.list(o?.revealSecrets === true)),
    pollTransactionChecks(group, options, signal?: SignalSource) {
      checkGroup(group);
      const max = options.max ?? 16;
      const waitMs = Math.min(options.waitMs ?? 0, config.pullWaitMsMax);
      if (!Number.isInteger(max) || max < 1 || max > 256) {
        return Promise.reject(
          new BrokerError("INVALID_PARAMETER", "max must be an integer from 1 to 256"),
        );
      }
      if (!Number.isInteger(waitMs) || waitMs < 0) {
        return Promise.reject(
          new BrokerError("INVALID_PARAMETER", "waitMs must be an integer >= 0"),
        );
      }
      return polls.poll(group, max, waitMs, signalOf(signal));
    },
    registerTransactionCheckChannel: (group: string, channel: TransactionCheckChannel) =>
      channels.registerTransactionCheckChannel(group, channel),
  };
}
