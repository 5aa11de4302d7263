// Writing the StoreCheckpoint: ConsumeQueues and index are flushed first, then the page
// records how far they are durable. Recovery starts from `dispatchSafeOffset`, so it must
// never pass bytes the CommitLog has not synced. One write at a time; a replica truncation
// holds the turn while it cuts (a checkpoint would record offsets it is changing).
import type { StoreCheckpoint } from "./checkpoint.ts";
import type { GroupCommit } from "./commit_log/group_commit.ts";
import type { ConsumeQueueStore, CqSyncPolicy } from "./consume_queue/consume_queue_store.ts";
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
  /** Whether the one running syncs every ConsumeQueue. */
  #runningAll = false;
  /** Where dispatch was at the last checkpoint: none since, and a partial one is full. */
  #lastDispatched = -1;

  constructor(private readonly parts: CheckpointParts) {}

  /**
   * Writes a checkpoint, or joins the one being written. Without `cqSync`, every
   * ConsumeQueue is synced (a full checkpoint: close, an explicit call); with it, only the
   * queues due, and the checkpoint records no more than the skipped ones allow. A full
   * request that finds a partial one running writes its own after it.
   */
  run(cqSync?: CqSyncPolicy): Promise<void> {
    const running = this.#running;
    if (running && (cqSync || this.#runningAll)) return running;
    const write = running
      ? running.catch(() => {}).then(() => this.write(cqSync))
      : this.write(cqSync);
    const tracked: Promise<void> = write.finally(() => {
      if (this.#running === tracked) this.#running = undefined;
    });
    this.#running = tracked;
    this.#runningAll = !cqSync;
    return tracked;
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
    const guarded: Promise<void> = work.finally(() => {
      if (this.#running === guarded) this.#running = undefined;
    });
    guarded.catch(() => {});
    this.#running = guarded;
    this.#runningAll = true;
  }

  /** One checkpoint, now (a truncation writes one inside its turn); see run(). */
  async write(cqSync?: CqSyncPolicy): Promise<void> {
    if (!this.file) return;
    const { groupCommit, consumeQueues, index, dispatcher, sequencer } = this.parts;
    const dispatched = dispatcher.dispatchedOffset;
    const logicsTs = dispatcher.lastLogicsTimestamp;
    // Nothing dispatched since the last one: an idle moment syncs the queues skipped so far,
    // so a stop after it has little left to sync (with 1,000 topics, 8,000 queues).
    if (dispatched === this.#lastDispatched) cqSync = undefined;
    this.#lastDispatched = dispatched;
    const cqDurableBelow = await consumeQueues.datasyncAll(cqSync);
    await index.flush();
    const flushed = groupCommit.flushedOffset;
    await this.file.write({
      physicMsgTimestamp: sequencer.lastStoreTimestamp,
      logicsMsgTimestamp: logicsTs,
      indexMsgTimestamp: logicsTs,
      flushedOffset: flushed,
      dispatchSafeOffset: Math.min(dispatched, flushed, cqDurableBelow),
    });
  }
}
