// Pull by offset with long polling (PullMessageProcessor + PullRequestHoldService): a pull
// that finds nothing waits, up to its waitMs, until dispatch reports a message for its
// queue. A pull with a group commits the next offset for it.
import type { MessageStore } from "../../storage/message_store.ts";
import type { ConsumerOffsetStore } from "../../storage/metadata/offset_store.ts";
import { tagsCodeOf } from "../../storage/dispatch_request.ts";
import { BrokerError } from "../protocol/errors.ts";
import {
  type PullRequest,
  type PullResult,
  type RecordPullResult,
  signalOf,
  type SignalSource,
} from "../protocol/types.ts";
import type { StoredMessage } from "../../storage/message_store.ts";
import type { PullHoldService } from "../long_polling.ts";
import type { BodyText } from "../platform/platform.ts";
import { parseTagExpression, toWireMessage } from "../wire.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface PullSettings {
  pullMsgNumsDefault: number;
  pullMsgNumsMax: number;
  pullWaitMsMax: number;
  pullBytesMax: number;
  heldPullsMax: number;
}

export interface PullerDeps {
  store: MessageStore;
  holds: PullHoldService;
  offsets: ConsumerOffsetStore;
  topics: TopicRegistry;
  groups: GroupRegistry;
  settings: PullSettings;
  bodyText: BodyText;
  nowMs: () => number;
}

export class Puller {
  readonly #d: PullerDeps;
  #closing = false;

  constructor(deps: PullerDeps) {
    this.#d = deps;
  }

  /** Answer held pulls now, and every later one without waiting. */
  close(): void {
    this.#closing = true;
    this.#d.holds.close();
  }

  async pull(
    topic: string,
    queueId: number,
    request: PullRequest,
    signalSource?: SignalSource,
  ): Promise<PullResult> {
    this.#d.topics.readable(topic, queueId);
    if (request.group !== undefined) await this.#d.groups.existing(request.group);
    const got = await this.#scan(topic, queueId, request, signalSource);
    const messages = got.found.map((m) => toWireMessage(m.record, m.queueOffset, this.#d.bodyText));
    if (request.group !== undefined) {
      this.#d.offsets.commit(request.group, topic, queueId, got.nextOffset);
    }
    return { ...got.result, messages };
  }

  /**
   * The same pull, answered with the stored records as they are (RocketMQ's byte layout,
   * for the remoting front end). A group's own retry and DLQ topics are never registered
   * topics (they have one queue), so they are readable here by name.
   */
  async pullRecords(
    topic: string,
    queueId: number,
    request: PullRequest,
    signalSource?: SignalSource,
  ): Promise<RecordPullResult> {
    this.#d.topics.readableQueue(topic, queueId);
    const got = await this.#scan(topic, queueId, { ...request, group: undefined }, signalSource);
    let bodyBytes = 0;
    for (const m of got.found) bodyBytes += m.record.body.byteLength;
    return { ...got.result, records: got.found.map((m) => m.bytes), bodyBytes };
  }

  async #scan(
    topic: string,
    queueId: number,
    request: PullRequest,
    signalSource?: SignalSource,
  ): Promise<Scanned> {
    const { store, holds, settings } = this.#d;
    const max = Math.min(request.max ?? settings.pullMsgNumsDefault, settings.pullMsgNumsMax);
    const waitMs = Math.min(request.waitMs ?? 0, settings.pullWaitMsMax);
    const tags = parseTagExpression(request.tags);
    const tagCodes = tags ? new Set([...tags].map(tagsCodeOf)) : undefined;
    const deadline = this.#d.nowMs() + waitMs;
    let offset = request.offset;
    let signal: AbortSignal | undefined; // read only once the pull has to wait
    for (;;) {
      const got = store.getMessage(topic, queueId, offset, {
        maxMsgNums: max,
        maxBytes: settings.pullBytesMax,
        filter: tags ? { tags } : undefined,
      });
      const range = { minOffset: got.minOffset, maxOffset: got.maxOffset };
      if (got.status === "OFFSET_TOO_SMALL" || got.status === "OFFSET_OVERFLOW_BADLY") {
        throw new BrokerError(
          "OFFSET_OUT_OF_RANGE",
          `Cannot pull ${topic}:${queueId} at offset ${offset}: valid offsets are ${range.minOffset} to ${range.maxOffset}`,
          range,
        );
      }
      if (got.status === "FOUND") {
        return this.#answer("FOUND", got.messages, got.nextBeginOffset, range);
      }
      if (got.status === "NO_MATCHED_MESSAGE" || got.status === "OFFSET_FOUND_NULL") {
        offset = Math.max(offset, got.nextBeginOffset);
      }
      if (offset < got.maxOffset && got.status === "NO_MATCHED_MESSAGE") continue; // keep scanning
      const left = deadline - this.#d.nowMs();
      if (left > 0) signal ??= signalOf(signalSource);
      if (left <= 0 || this.#closing || signal?.aborted) {
        const status = offset > request.offset ? "NO_MATCHED_MESSAGE" : "NO_NEW_MESSAGE";
        const next = Math.max(offset, got.nextBeginOffset);
        return this.#answer(status, [], next, range);
      }
      if (!holds.canHold()) {
        throw new BrokerError(
          "TOO_MANY_WAITING",
          `Cannot hold another pull: heldPullsMax ${settings.heldPullsMax} reached; retry shortly`,
        );
      }
      await holds.hold(topic, queueId, offset, left, tagCodes, signal);
    }
  }

  #answer(
    status: PullResult["status"],
    found: StoredMessage[],
    nextOffset: number,
    range: { minOffset: number; maxOffset: number },
  ): Scanned {
    return { result: { status, nextOffset, ...range }, found, nextOffset };
  }
}

interface Scanned {
  result: Omit<PullResult, "messages">;
  found: StoredMessage[];
  nextOffset: number;
}
