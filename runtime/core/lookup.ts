// Finding stored messages: by unique id, by key, by store time (QueryMessageProcessor).
import type { MessageStore } from "../../storage/message_store.ts";
import { PROPERTY_UNIQ_KEY } from "../../storage/message/message_const.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkReadableTopic } from "../protocol/names.ts";
import type { FindQuery, WireMessage } from "../protocol/types.ts";
import { MESSAGE_ID_PATTERN } from "../message_id.ts";
import { toWireMessage } from "../wire.ts";
import type { TopicRegistry } from "./topic_registry.ts";
import type { BodyText } from "../platform/platform.ts";

export interface LookupSettings {
  /** Messages a find answers when the query names no maxNum (defaultQueryMaxNum). */
  queryMessageNumsDefault: number;
  /** Most messages one find answers (maxMsgsNumBatch). */
  queryMessageNumsMax: number;
  pullBytesMax: number;
}

export class MessageLookup {
  constructor(
    private readonly store: MessageStore,
    private readonly topics: TopicRegistry,
    private readonly settings: LookupSettings,
    private readonly bodyText: BodyText,
    /** The state of a transactional message not delivered (yet), for the not-found answer. */
    private readonly transactionState?: (id: string) => Promise<string | undefined>,
  ) {}

  getMessageById(messageId: string, topic?: string): Promise<WireMessage> {
    if (!MESSAGE_ID_PATTERN.test(messageId)) {
      return Promise.reject(
        new BrokerError(
          "INVALID_PARAMETER",
          `Cannot look up message id ${
            JSON.stringify(messageId.slice(0, 64))
          }: ids are 32 upper-case hex characters`,
        ),
      );
    }
    const topics = topic ? [checkReadableTopic(topic)] : this.topics.names();
    const all = { maxNum: 1, beginTimestamp: 0, endTimestamp: Number.MAX_SAFE_INTEGER };
    for (const t of topics) {
      for (const record of this.store.queryMessage(t, messageId, all)) {
        if (record.properties.get(PROPERTY_UNIQ_KEY) === messageId) {
          return Promise.resolve(toWireMessage(record, record.queueOffset, this.bodyText));
        }
      }
    }
    const notFound = new BrokerError("MESSAGE_NOT_FOUND", `No message with id ${messageId}`);
    if (topic !== undefined || this.transactionState === undefined) return Promise.reject(notFound);
    // A half message is no message to consumers; operators see why (docs/transactions.md).
    return this.transactionState(messageId).then((state) => {
      if (state === undefined) throw notFound;
      throw new BrokerError(
        "MESSAGE_NOT_FOUND",
        `No message with id ${messageId}: it is a transactional message, ${state} (GET /v1/transactions/${messageId})`,
        { transactionState: state },
      );
    });
  }

  findMessages(topic: string, query: FindQuery): Promise<WireMessage[]> {
    checkReadableTopic(topic);
    const config = this.topics.find(topic);
    if (!config) return Promise.reject(new BrokerError("TOPIC_NOT_FOUND", `No topic ${topic}`));
    const { queryMessageNumsDefault, queryMessageNumsMax, pullBytesMax } = this.settings;
    const maxNum = Math.min(query.maxNum ?? queryMessageNumsDefault, queryMessageNumsMax);
    const begin = query.beginTimestamp ?? 0;
    const end = query.endTimestamp ?? Number.MAX_SAFE_INTEGER;
    if (query.key !== undefined) {
      const range = { maxNum, beginTimestamp: begin, endTimestamp: end };
      const records = this.store.queryMessage(topic, query.key, range);
      return Promise.resolve(records.map((r) => toWireMessage(r, r.queueOffset, this.bodyText)));
    }
    const out: WireMessage[] = [];
    for (let q = 0; q < config.readQueueNums && out.length < maxNum; q++) {
      const offset = this.store.getOffsetInQueueByTime(topic, q, begin);
      const got = this.store.getMessage(topic, q, offset, {
        maxMsgNums: maxNum - out.length,
        maxBytes: pullBytesMax,
      });
      for (const m of got.messages) {
        if (m.record.storeTimestamp > end) break;
        out.push(toWireMessage(m.record, m.queueOffset, this.bodyText));
      }
    }
    return Promise.resolve(out);
  }
}
