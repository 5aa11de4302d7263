// The truncation marker `root/truncate`: written durably before a CommitLog truncation
// touches any file and removed once everything is cut and synced. Cutting a log is several
// steps (later segments, the tail of one segment, ConsumeQueues, index, checkpoint); a crash
// between them could leave whole, CRC-valid records of the dropped tail on disk, which the
// recovery scan would accept and serve again. While the marker exists, recovery ends the log
// at its offset and finishes the cut (storage/recovery.ts).
//
// Content: the offset in decimal and "\n", written atomically (temp, fdatasync, rename,
// folder fsync), so a reader sees a whole marker or none.
import type { FilePort } from "../file_port.ts";
import { joinPath, readWholeFile, writeFileAtomic } from "../file_port.ts";
import { ReplicaError } from "./replica_errors.ts";

export const TRUNCATE_MARKER_NAME = "truncate";

export function truncateMarkerPath(root: string): string {
  return joinPath(root, TRUNCATE_MARKER_NAME);
}

/** The offset of an unfinished truncation, or undefined when there is none. */
export function readTruncateMarker(files: FilePort, root: string): number | undefined {
  const bytes = readWholeFile(files, truncateMarkerPath(root));
  if (bytes === null) return undefined;
  const text = new TextDecoder().decode(bytes);
  if (!/^\d{1,16}\n$/.test(text) || !Number.isSafeInteger(Number(text.trim()))) {
    throw new ReplicaError(
      "TRUNCATE_MARKER_CORRUPT",
      `Cannot finish the CommitLog truncation recorded in ${
        truncateMarkerPath(root)
      } as it holds no offset`,
    );
  }
  return Number(text.trim());
}

export function writeTruncateMarker(files: FilePort, root: string, offset: number) {
  return writeFileAtomic(files, truncateMarkerPath(root), new TextEncoder().encode(`${offset}\n`));
}

export async function removeTruncateMarker(files: FilePort, root: string) {
  files.remove(truncateMarkerPath(root));
  await files.syncDir(root);
}
