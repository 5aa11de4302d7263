// Writing the StoreCheckpoint: ConsumeQueues and index are flushed first, then the page
// records how far they are durable. Recovery starts from `dispatchSafeOffset`, so it must
// never pass bytes the CommitLog has not synced. One write at a time; a replica truncation
// holds the turn while it cuts (a checkpoint would record offsets it is changing).
import type { StoreCheckpoint } from "./checkpoint.ts";
import type { GroupCommit } from "./commit_log/group_commit.ts";
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import type { Dispatcher } from "./dispatcher.ts";
import type { IndexService } from "./index/index_service.ts";
import type { PutSequencer } from "./put_sequencer.ts";

export interface CheckpointParts {
  groupCommit: GroupCommit;
  consumeQueues: ConsumeQueueStore;
  index: IndexService;
  dispatcher: Dispatcher;
  sequencer: PutSequencer;
}

export class CheckpointWriter {
  /** The page, once the store is open. */
  file: StoreCheckpoint | undefined;
  #running: Promise<void> | undefined;

  constructor(private readonly parts: CheckpointParts) {}

  /** Writes a checkpoint, or joins the one being written. */
  run(): Promise<void> {
    if (!this.#running) {
      this.#running = this.write().finally(() => (this.#running = undefined));
    }
    return this.#running;
  }

  /** The checkpoint being written, if one is. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  /** Waits for a checkpoint (or a truncation holding the turn) to settle. */
  async idle(): Promise<void> {
    await this.#running?.catch(() => {});
  }

  /** Checkpoints wait for `work` (a truncation) instead of running beside it. */
  holdDuring(work: Promise<void>): void {
    const guarded = work.finally(() => (this.#running = undefined));
    guarded.catch(() => {});
    this.#running = guarded;
  }

  /** One checkpoint, now (a truncation writes one inside its turn). */
  async write(): Promise<void> {
    if (!this.file) return;
    const { groupCommit, consumeQueues, index, dispatcher, sequencer } = this.parts;
    const dispatched = dispatcher.dispatchedOffset;
    const logicsTs = dispatcher.lastLogicsTimestamp;
    await consumeQueues.datasyncAll();
    await index.flush();
    const flushed = groupCommit.flushedOffset;
    await this.file.write({
      physicMsgTimestamp: sequencer.lastStoreTimestamp,
      logicsMsgTimestamp: logicsTs,
      indexMsgTimestamp: logicsTs,
      flushedOffset: flushed,
      dispatchSafeOffset: Math.min(dispatched, flushed),
    });
  }
}
