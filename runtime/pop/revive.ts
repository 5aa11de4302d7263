// The revive loop: reads the CKs the timer wheel delivered to the revive topic (their
// messages were not acked in time) and brings each message back, or buries it.
import { REVIVE_TOPIC } from "../../storage/message/message_const.ts";
import type { MessageRecord } from "../../storage/message/record.ts";
import { parseCheckpoint } from "./checkpoint.ts";
import type { OrderlyPop } from "./orderly.ts";
import type { PopDeps } from "./pop_types.ts";
import { bury, requeue } from "./requeue.ts";

/** The revive loop's own progress, kept as a consumer offset of this pseudo group. */
const REVIVE_GROUP = "%REVIVE%";

export class ReviveLoop {
  #reviving = false;

  constructor(private readonly deps: PopDeps, private readonly orderly: OrderlyPop) {}

  /** Dispatch's notice that CKs fired: bring their messages back, or bury them. */
  arriving(): void {
    if (this.#reviving) return;
    this.#reviving = true;
    this.#revive().catch((err) => this.deps.log("error", "revive failed", { err: String(err) }))
      .finally(() => this.#reviving = false);
  }

  async #revive() {
    const { store } = this.deps;
    for (;;) {
      const from = this.deps.offsets.query(REVIVE_GROUP, REVIVE_TOPIC, 0) ??
        store.getMinOffsetInQueue(REVIVE_TOPIC, 0);
      const got = store.getMessage(REVIVE_TOPIC, 0, from, {
        maxMsgNums: this.deps.settings.popReviveBatchNums,
        maxBytes: this.deps.settings.popReadBytesMax,
      });
      if (got.messages.length === 0) {
        if (got.status === "OFFSET_TOO_SMALL") {
          this.deps.offsets.commit(REVIVE_GROUP, REVIVE_TOPIC, 0, got.nextBeginOffset);
        }
        return;
      }
      await Promise.all(got.messages.map((m) => this.#reviveOne(m.record)));
      this.deps.offsets.commit(REVIVE_GROUP, REVIVE_TOPIC, 0, got.nextBeginOffset);
    }
  }

  #reviveOne(ckRecord: MessageRecord): Promise<unknown> {
    const ck = parseCheckpoint(ckRecord.body);
    if (ck?.ord) return this.orderly.failed(ck);
    const original = ck ? this.deps.store.lookMessageByOffset(ck.c) : undefined;
    if (!ck || !original) return Promise.resolve(); // retention took it: nothing to bring back
    const reconsumeTimes = original.reconsumeTimes + 1;
    if (
      reconsumeTimes >
        (this.deps.groupOf(ck.g)?.retryMaxTimes ?? this.deps.settings.retryMaxTimesDefault)
    ) {
      return bury(this.deps, ck.g, original, reconsumeTimes);
    }
    return requeue(this.deps, ck.g, original, reconsumeTimes, false);
  }
}
