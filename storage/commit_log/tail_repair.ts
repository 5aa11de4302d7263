// After a CommitLog write failed for want of space (write_gate.ts): the part of it that
// landed is cut off, and a probe write tells when the disk takes writes again.
import { assert } from "../errors.ts";
import type { CommitLog } from "./commit_log.ts";

/**
 * Cuts off whatever part of a failed write landed past the written end (it may hold whole
 * records with valid CRCs that were never acknowledged), grows the segment back with zeros
 * (no space needed: the file is sparse there) and makes the cut durable. A segment being
 * zero-filled gives its space back first.
 */
export async function cutTail(log: CommitLog): Promise<void> {
  assert(!log.hasPending, "cutTail with pending writes");
  log.releaseNext();
  const last = log.segments.at(-1);
  if (!last || !last.contains(log.wroteOffset)) return;
  last.file.truncate(log.wroteOffset - last.startOffset);
  last.file.truncate(last.sizeBytes);
  await last.file.datasync();
}

/**
 * Writes up to `bytes` zeros at the written end of the current segment and returns how
 * many. Past the end the log is zeros already, so nothing changes for a reader or for
 * recovery; the blocks stay, room for the next records. Throws what the write throws
 * (ENOSPC while the disk is still full).
 */
export function probeWrite(log: CommitLog, bytes: number): number {
  assert(!log.hasPending, "probeWrite with pending writes");
  const last = log.segments.at(-1);
  if (!last || !last.contains(log.wroteOffset)) return 0;
  const n = Math.min(bytes, last.endOffset - log.wroteOffset);
  last.file.writeAt(new Uint8Array(n), log.wroteOffset - last.startOffset);
  return n;
}
