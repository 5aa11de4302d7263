// What PopService and its parts are handed (PopDeps) and what a receive asks for
// (ReceiveRequest): types only, so every part of runtime/pop/ imports them without a cycle.
import type { BodyText } from "../platform/platform.ts";
import type { MessageStore } from "../../storage/message_store.ts";
import type { SignalSource } from "../protocol/types.ts";
import type { PullHoldService } from "../long_polling.ts";
import type { Logger } from "../log.ts";
import type { ConsumerGroupConfig } from "../../storage/metadata/metadata_store.ts";

export interface PopDeps {
  store: MessageStore;
  holds: PullHoldService;
  nowMs: () => number;
  log: Logger;
  newId: () => string;
  storeHost: { ip: Uint8Array; port: number };
  offsets: {
    query(group: string, topic: string, queueId: number): number | undefined;
    commit(group: string, topic: string, queueId: number, offset: number): void;
  };
  groupOf(group: string): ConsumerGroupConfig | undefined;
  /** Delay levels in ms (level N waits delayLevelsMs[N - 1]). */
  delayLevelsMs: readonly number[];
  /** The platform's body decoding (wire.ts). */
  bodyText: BodyText;
  /** Bytes a receive (and each revive step) reads from one queue; checkpoints per revive step. */
  settings: {
    popReadBytesMax: number;
    popReviveBatchNums: number;
    popSettledHandlesMax: number;
    popInflightMax: number;
    retryMaxTimesDefault: number;
  };
}

export interface ReceiveRequest {
  group: string;
  /** Required for broadcasting groups: each client has offsets of its own. */
  clientId?: string;
  topic: string;
  readQueueNums: number;
  max: number;
  invisibleMs: number;
  waitMs: number;
  signal?: SignalSource;
}
