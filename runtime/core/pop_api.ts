// POP consumption as the API shows it: argument checks in front of PopService (receive,
// ack, nack, change invisible time), which owns checkpoints and revive.
import { BrokerError } from "../protocol/errors.ts";
import type { AckResult, PopMessage, ReceiveOptions, SignalSource } from "../protocol/types.ts";
import type { PopService } from "../pop_service.ts";
import { fromStoreError } from "../wire.ts";
import { itemError } from "./errors.ts";
import type { GroupRegistry } from "./group_registry.ts";
import type { TopicRegistry } from "./topic_registry.ts";

export interface PopSettings {
  popMsgNumsMax: number;
  popInvisibleMsDefault: number;
  popInvisibleMsMin: number;
  popInvisibleMsMax: number;
  pullWaitMsMax: number;
}

const CLIENT_ID = /^[\x21-\x7e]{1,255}$/;

export class PopApi {
  constructor(
    private readonly pop: PopService,
    private readonly topics: TopicRegistry,
    private readonly groups: GroupRegistry,
    private readonly settings: PopSettings,
  ) {}

  async receive(
    group: string,
    options: ReceiveOptions,
    signal?: SignalSource,
  ): Promise<PopMessage[]> {
    await this.groups.existing(group);
    const topic = this.topics.readable(options.topic, 0);
    const c = this.settings;
    const max = options.max ?? c.popMsgNumsMax;
    const invisibleMs = options.invisibleMs ?? c.popInvisibleMsDefault;
    const waitMs = Math.min(options.waitMs ?? 0, c.pullWaitMsMax);
    if (!Number.isInteger(max) || max < 1 || max > c.popMsgNumsMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot receive ${max} messages: 1-${c.popMsgNumsMax} (popMsgNumsMax)`,
      );
    }
    this.#checkInvisible(invisibleMs);
    const clientId = options.clientId;
    if (clientId !== undefined && (typeof clientId !== "string" || !CLIENT_ID.test(clientId))) {
      throw new BrokerError("INVALID_PARAMETER", "clientId must be 1-255 visible ASCII characters");
    }
    return this.pop.receive({
      group,
      clientId,
      topic: topic.name,
      readQueueNums: topic.readQueueNums,
      max,
      invisibleMs,
      waitMs,
      signal,
    }).catch((err) => {
      throw fromStoreError(err);
    });
  }

  async ack(group: string, receiptHandle: string): Promise<void> {
    await this.groups.existing(group);
    await this.pop.ack(group, receiptHandle);
  }

  /** Acks many handles at once; each succeeds or fails alone (their markers share a write). */
  async ackBatch(group: string, receiptHandles: string[]): Promise<AckResult[]> {
    await this.groups.existing(group);
    const settled = await Promise.allSettled(receiptHandles.map((h) => this.pop.ack(group, h)));
    return settled.map((s, i) =>
      s.status === "fulfilled"
        ? { receiptHandle: receiptHandles[i], ok: true }
        : { receiptHandle: receiptHandles[i], ok: false, error: itemError(s.reason) }
    );
  }

  async nack(group: string, receiptHandle: string, delayMs?: number): Promise<void> {
    await this.groups.existing(group);
    const max = this.settings.popInvisibleMsMax;
    if (delayMs !== undefined && (!Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > max)) {
      throw new BrokerError("INVALID_PARAMETER", `Cannot nack with delayMs ${delayMs}: 0-${max}`);
    }
    await this.pop.nack(group, receiptHandle, delayMs);
  }

  async changeInvisibleTime(
    group: string,
    receiptHandle: string,
    invisibleMs: number,
  ): Promise<{ invisibleUntil: number }> {
    await this.groups.existing(group);
    this.#checkInvisible(invisibleMs);
    return {
      invisibleUntil: await this.pop.changeInvisibleTime(group, receiptHandle, invisibleMs),
    };
  }

  #checkInvisible(invisibleMs: number) {
    const { popInvisibleMsMin: min, popInvisibleMsMax: max } = this.settings;
    if (!Number.isSafeInteger(invisibleMs) || invisibleMs < min || invisibleMs > max) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot use invisibleMs ${invisibleMs}: ${min}-${max}`,
      );
    }
  }
}
