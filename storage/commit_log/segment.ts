// One CommitLog file (RocketMQ's MappedFile; we do not mmap). A segment is created
// full length and named by its first global offset, 20 digits zero-padded, so a
// reader finds the file of any offset by division.
import type { FileHandle, FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";

export const SEGMENT_NAME_DIGITS = 20;
export function segmentName(startOffset: number): string {
  return String(startOffset).padStart(SEGMENT_NAME_DIGITS, "0");
}

export function parseSegmentName(name: string): number | undefined {
  return /^\d{20}$/.test(name) ? Number(name) : undefined;
}

export class Segment {
  /** Resolves once the file's name is durable (its folder fsynced after creation). */
  nameDurable: Promise<void> = Promise.resolve();
  constructor(
    readonly startOffset: number,
    readonly sizeBytes: number,
    readonly file: FileHandle,
  ) {}

  get endOffset(): number {
    return this.startOffset + this.sizeBytes;
  }

  contains(offset: number): boolean {
    return offset >= this.startOffset && offset < this.endOffset;
  }

  /** Creates the file full length (sparse) and makes its name durable in the background. */
  static create(files: FilePort, dir: string, startOffset: number, sizeBytes: number): Segment {
    const file = files.open(joinPath(dir, segmentName(startOffset)), { create: true });
    file.truncate(sizeBytes);
    const segment = new Segment(startOffset, sizeBytes, file);
    // Length first, then the name: a durable name with a lost length would be a short file.
    segment.nameDurable = file.datasync().then(() => files.syncDir(dir));
    // Awaited by the flush before any ack; this keeps a failure from going unhandled meanwhile.
    segment.nameDurable.catch(() => {});
    return segment;
  }

  close(): void {
    this.file.close();
  }
}
