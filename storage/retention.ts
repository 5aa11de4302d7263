// Expired-file cleanup (reference/rocketmq.md §6). A run deletes CommitLog segments,
// oldest first, when the hour is in `deleteWhen`, when disk use passes
// diskMaxUsedSpaceRatio (expired files only) or diskSpaceCleanForciblyRatio (any age), or
// on request. Never the segment being written; at most deleteFileBatchMax per run; it
// stops at the first segment that has not expired. ConsumeQueue and index files that only
// point below the new minimum go with them. Clock and disk use are injected.
import type { MessageStore, StoreLog } from "./message_store.ts";

const HOUR_MS = 3_600_000;

export class Retention {
  constructor(
    private readonly store: MessageStore,
    private readonly options: { nowMs: () => number; diskUsedRatio: () => number; log: StoreLog },
  ) {}

  /** Returns the number of CommitLog segments deleted. */
  run({ manual }: { manual: boolean }): Promise<number> {
    const config = this.store.config;
    const now = this.options.nowMs();
    const used = this.options.diskUsedRatio();
    const warning = clamp(config.diskSpaceWarningLevelRatio, 35, 90);
    const forcibly = used > clamp(config.diskSpaceCleanForciblyRatio, 30, 85);
    const high = used > clamp(config.diskMaxUsedSpaceRatio, 10, 95);
    const wasFull = this.store.diskFull;
    this.store.diskFull = used > warning;
    if (this.store.diskFull !== wasFull) {
      this.options.log(
        this.store.diskFull ? "error" : "info",
        "disk use crossed diskSpaceWarningLevelRatio",
        { used, warning },
      );
    }
    const hours = config.deleteWhen.split(";").map((h) => Number(h.trim()));
    const timeToDelete = hours.includes(new Date(now).getHours());
    if (!(manual || timeToDelete || high || forcibly)) return Promise.resolve(0);

    const log = this.store.commitLog;
    const reservedMs = config.fileReservedTime * HOUR_MS;
    let deleted = 0;
    while (deleted < config.deleteFileBatchMax && log.segments.length > 1) {
      const oldest = log.segments[0];
      // The segment holding the write position is never deleted.
      if (oldest.endOffset > this.store.dispatchedOffset) break;
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
