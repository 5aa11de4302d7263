// Expired-file cleanup (reference/rocketmq.md §6). A run deletes CommitLog segments,
// oldest first, when the hour is in `deleteWhen`, when disk use passes
// diskMaxUsedSpaceRatio (expired files only) or diskSpaceCleanForciblyRatio (any age), or
// on request. Never the segment being written; at most deleteFileBatchMax per run; it
// stops at the first segment that has not expired. ConsumeQueue and index files that only
// point below the new minimum go with them. Clock and disk use are injected.
import { diskWarningRatio, type StoreConfig } from "./config.ts";
import type { FilePort } from "./file_port.ts";
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { ConsumeQueueStore } from "./consume_queue/consume_queue_store.ts";
import type { IndexService } from "./index/index_service.ts";
import type { StoreLog } from "./store_types.ts";

const HOUR_MS = 3_600_000;

/** The parts of the store retention reads and deletes from. */
export interface RetentionParts {
  files: FilePort;
  config: StoreConfig;
  commitLog: CommitLog;
  consumeQueues: ConsumeQueueStore;
  index: IndexService;
  /** Writes are refused while the disk is nearly full. */
  gate: { diskFull: boolean };
  dispatcher: { readonly dispatchedOffset: number };
}

export class Retention {
  constructor(
    private readonly store: RetentionParts,
    private readonly options: { nowMs: () => number; diskUsedRatio: () => number; log: StoreLog },
  ) {}

  /** Returns the number of CommitLog segments deleted. */
  run({ manual }: { manual: boolean }): Promise<number> {
    const config = this.store.config;
    const now = this.options.nowMs();
    const used = this.options.diskUsedRatio();
    const warning = diskWarningRatio(config);
    const forcibly = used > clamp(config.diskSpaceCleanForciblyRatio, 30, 85);
    const high = used > clamp(config.diskMaxUsedSpaceRatio, 10, 95);
    // The gate logs and counts the change, both ways.
    this.store.gate.diskFull = used > warning;
    const hours = config.deleteWhen.split(";").map((h) => Number(h.trim()));
    const timeToDelete = hours.includes(new Date(now).getHours());
    if (!(manual || timeToDelete || high || forcibly)) return Promise.resolve(0);

    const log = this.store.commitLog;
    const reservedMs = config.fileReservedTime * HOUR_MS;
    let deleted = 0;
    while (deleted < config.deleteFileBatchMax && log.segments.length > 1) {
      const oldest = log.segments[0];
      // The segment holding the write position is never deleted.
      if (oldest.endOffset > this.store.dispatcher.dispatchedOffset) break;
      const expired = this.store.files.modifiedMs(oldest.file.path) + reservedMs <= now;
      if (!expired && !forcibly) break;
      log.removeOldest();
      deleted++;
    }
    if (deleted > 0) {
      const min = log.minOffset;
      for (const cq of this.store.consumeQueues.all()) cq.deleteBelow(min);
      this.options.log("info", "retention deleted CommitLog segments", {
        deleted,
        minOffset: min,
        forcibly,
      });
      return this.store.index.deleteFilesBelow(min)
        .then(() => this.store.files.syncDir(log.dir))
        .then(() => deleted);
    }
    return Promise.resolve(deleted);
  }
}

function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}
