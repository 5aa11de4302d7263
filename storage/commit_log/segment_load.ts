// Opening a CommitLog's segment files at start: each must have the segment size and a start
// on a segment boundary, and they must follow one another.
import type { FilePort } from "../file_port.ts";
import { StoreError } from "../errors.ts";
import { parseSegmentName, Segment } from "./segment.ts";

/** The folder's segments, oldest first; recovery then decides where the data ends. */
export function loadSegments(files: FilePort, dir: string, segmentBytes: number): Segment[] {
  const segments: Segment[] = [];
  const names = files.list(dir).filter((n) => parseSegmentName(n) !== undefined);
  for (const [i, name] of names.entries()) {
    const start = parseSegmentName(name)!;
    const file = files.open(`${dir}/${name}`);
    let size = file.size();
    if (size < segmentBytes && i === names.length - 1) {
      // A last segment whose length never reached the disk (crash right after creation):
      // what is missing was never synced, so zeros (end of data) are the truth.
      file.truncate(segmentBytes);
      size = segmentBytes;
    }
    if (size !== segmentBytes || start % segmentBytes !== 0) {
      file.close();
      throw new StoreError(
        "OFFSET_ILLEGAL",
        `Cannot load CommitLog segment ${name} as its size ${size} or start does not match mappedFileSizeCommitLog ${segmentBytes}`,
      );
    }
    if (segments.length && segments.at(-1)!.endOffset !== start) {
      // A segment whose name was lost in a crash: nothing in it, or after it, was ever
      // acknowledged (a flush waits for the name to be durable), so the rest goes.
      file.close();
      for (const rest of names.slice(i)) files.remove(`${dir}/${rest}`);
      break;
    }
    segments.push(new Segment(start, size, file));
  }
  return segments;
}
