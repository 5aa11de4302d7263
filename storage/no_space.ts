// A full disk heals (write_gate.ts, "no-space"). When a CommitLog write finds the disk full
// (ENOSPC), that write did not land as a whole, and nothing in it was acknowledged:
//  1. at once, in the same turn (no put can slip in): what was gathered and not written is
//     dropped, with its dispatch requests and queue offsets, and whatever part of the write
//     landed past the written end is cut off (it may hold whole records with valid CRCs
//     that a restart would otherwise serve); the cut is then made durable;
//  2. every noSpaceRetryMs, writes resume once the disk has noSpaceResumeBytes free (when
//     the platform can tell), a write of as many zeros at the CommitLog's end succeeds (the
//     probe: the zeros are where the log continues, so nothing changes for readers or for
//     recovery, and their blocks stay for the next records), and dispatch has caught up.
// A failed fdatasync is not this: it stays final (group_commit.ts).
import { isNoSpace } from "./file_port.ts";
import { cutTail, probeWrite } from "./commit_log/tail_repair.ts";
import type { FilePort } from "./file_port.ts";
import type { StoreConfig } from "./config.ts";
import type { CommitLog } from "./commit_log/commit_log.ts";
import type { GroupCommit } from "./commit_log/group_commit.ts";
import type { Dispatcher } from "./dispatcher.ts";
import type { PutSequencer } from "./put_sequencer.ts";
import type { WriteGate } from "./write_gate.ts";

/** The parts of the store (store_core.ts) a disk-full stop and its healing touch. */
export interface NoSpaceParts {
  files: FilePort;
  config: StoreConfig;
  commitLog: CommitLog;
  groupCommit: GroupCommit;
  dispatcher: Dispatcher;
  sequencer: PutSequencer;
  gate: WriteGate;
}

/** Step 1: drops what was not written and cuts off what landed; resolves once durable. */
export function dropUnwritten(core: Omit<NoSpaceParts, "gate">): Promise<void> {
  const { commitLog, dispatcher, sequencer } = core;
  commitLog.discardPending();
  dispatcher.dropFrom(commitLog.wroteOffset);
  sequencer.rewind(dispatcher.undispatched);
  return cutTail(commitLog);
}

/**
 * Step 2: resumes writes when space is back. Returns whether writes resumed. A failure
 * other than ENOSPC while cutting or probing is final (the gate refuses for good).
 */
export async function resumeIfSpace(core: NoSpaceParts): Promise<boolean> {
  const { gate, commitLog, config, files, dispatcher, groupCommit } = core;
  const noSpace = gate.noSpace;
  if (!noSpace || !gate.open || gate.failed || gate.truncating) return false;
  try {
    await noSpace.cut;
  } catch (err) {
    gate.fail(err as Error);
    return false;
  }
  if (gate.noSpace !== noSpace || gate.failed || gate.truncating) return false;
  const space = files.diskSpace?.(commitLog.dir);
  if (space && space.freeBytes < config.noSpaceResumeBytes) return false;
  try {
    probeWrite(commitLog, config.noSpaceResumeBytes);
    const confirm = config.flushDiskType === "SYNC_FLUSH"
      ? groupCommit.flushedOffset
      : commitLog.wroteOffset;
    dispatcher.dispatchUpTo(confirm);
  } catch (err) {
    if (!isNoSpace(err)) gate.fail(err as Error);
    return false;
  }
  gate.resume();
  return true;
}
