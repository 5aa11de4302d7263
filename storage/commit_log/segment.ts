// One CommitLog file (RocketMQ's MappedFile; we do not mmap). A segment is created
// full length and named by its first global offset, 20 digits zero-padded, so a
// reader finds the file of any offset by division.
import type { FileHandle, FilePort } from "../file_port.ts";
import { joinPath } from "../file_port.ts";

export const SEGMENT_NAME_DIGITS = 20;
/** Zero-fill chunk: small enough that one write never stalls the event loop for long. */
const ZERO_FILL_CHUNK_BYTES = 4 * 1024 * 1024;

export function segmentName(startOffset: number): string {
  return String(startOffset).padStart(SEGMENT_NAME_DIGITS, "0");
}

export function parseSegmentName(name: string): number | undefined {
  return /^\d{20}$/.test(name) ? Number(name) : undefined;
}

export class Segment {
  /** Resolves once the file's name is durable (its folder fsynced after creation). */
  nameDurable: Promise<void> = Promise.resolve();
  #zeroFillCancelled = false;
  #zeroFill: Promise<void> = Promise.resolve();

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

  /**
   * Writes real zeros over the file in small chunks, yielding between them, then syncs:
   * fdatasync on pre-written blocks skips ext4 metadata commits. Cancelled the moment
   * the segment is needed for data, so it never overwrites a record.
   */
  startZeroFill(): void {
    const zeros = new Uint8Array(Math.min(ZERO_FILL_CHUNK_BYTES, this.sizeBytes));
    this.#zeroFill = (async () => {
      for (let at = 0; at < this.sizeBytes; at += zeros.length) {
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (this.#zeroFillCancelled) return;
        this.file.writeAt(zeros.subarray(0, Math.min(zeros.length, this.sizeBytes - at)), at);
      }
      if (!this.#zeroFillCancelled) await this.file.datasync();
    })().catch(() => {
      // A failed zero-fill only costs speed; the data path syncs and checks on its own.
    });
  }

  /** Stops a zero-fill before the first record goes in. */
  claim(): Promise<void> {
    this.#zeroFillCancelled = true;
    return this.#zeroFill;
  }

  close(): void {
    this.#zeroFillCancelled = true;
    this.file.close();
  }
}
