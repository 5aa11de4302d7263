// The epoch file (RocketMQ's `root/epochFileCheckpoint`, EpochFileCache over CheckpointFile;
// reference/rocketmq.md §15, "Controller mode"). Each time a broker becomes master it bumps
// the epoch and records at which CommitLog offset that epoch starts; an entry ends where the
// next begins, the last one at the end of the log. Two replicas agree on their logs up to the
// end of the highest epoch they share with the same start (findConsistentPoint), which is
// where a returning old master, or a slave that ran ahead, truncates.
//
// Text, as CheckpointFile writes it ("\n" is System.lineSeparator() on Linux):
//
//   2                  number of entries
//   1786543210         CRC32 of the entry lines below (with their "\n"), & 0x7FFFFFFF
//   1-0                epoch-startOffset
//   2-1048576
//
// Written whole and atomically: temp file, fdatasync, rename, fsync of the folder. A reader
// therefore sees the old or the new file, never a mix; a CRC or count mismatch is damage.
import { crc32 } from "../crc32.ts";
import type { FilePort } from "../file_port.ts";
import { readWholeFile, writeFileAtomic } from "../file_port.ts";
import { ReplicaError } from "./replica_errors.ts";

export const EPOCH_FILE_NAME = "epochFileCheckpoint";
/** Epochs are RocketMQ ints; 0 means "no epoch" (an empty file). */
export const EPOCH_MAX = 0x7fffffff;

export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export class EpochFile {
  #entries: EpochEntry[];
  /** Writes run one at a time, in call order; memory changes only after the rename. */
  #writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly files: FilePort,
    readonly path: string,
    entries: EpochEntry[],
  ) {
    this.#entries = entries;
  }

  /** Reads the file (missing: no entries). Throws EPOCH_FILE_CORRUPT on damage. */
  static open(files: FilePort, path: string): EpochFile {
    const bytes = readWholeFile(files, path);
    return new EpochFile(files, path, bytes === null ? [] : parseEpochFile(bytes, path));
  }

  get entries(): readonly EpochEntry[] {
    return this.#entries;
  }
  /** The newest epoch, or 0 when there is none. */
  get lastEpoch(): number {
    return this.#entries.at(-1)?.epoch ?? 0;
  }
  get lastEntry(): EpochEntry | undefined {
    return this.#entries.at(-1);
  }

  /** The entry whose range holds `offset`, and where it ends (Infinity for the last). */
  entryAt(offset: number): { entry: EpochEntry; endOffset: number } | undefined {
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      if (this.#entries[i].startOffset <= offset) {
        const next = this.#entries[i + 1];
        return { entry: this.#entries[i], endOffset: next ? next.startOffset : Infinity };
      }
    }
    return undefined;
  }

  /**
   * Records that `epoch` starts at `startOffset`. The epoch must be higher than the last
   * and the start no lower than the last start (an equal start leaves the previous epoch
   * empty, as when a master is re-elected before it wrote anything).
   */
  append(epoch: number, startOffset: number): Promise<void> {
    return this.#change((entries) => {
      checkEntry(epoch, startOffset);
      const last = entries.at(-1);
      if (last && (epoch <= last.epoch || startOffset < last.startOffset)) {
        throw new ReplicaError(
          "EPOCH_ILLEGAL",
          `Cannot append epoch ${epoch} at offset ${startOffset} as the last entry is epoch ${last.epoch} at ${last.startOffset}`,
        );
      }
      return [...entries, { epoch, startOffset }];
    });
  }

  /** Drops entries that start at or after `offset` (the log is being cut there). */
  truncateFrom(offset: number): Promise<void> {
    return this.#change((entries) => entries.filter((e) => e.startOffset < offset));
  }

  /**
   * Drops entries that start beyond `maxOffset`, the end of the log as recovered: a crash
   * between a CommitLog truncation and the epoch file's leaves such entries behind. An entry
   * starting exactly at the end stays (a master that has not written yet in its epoch).
   */
  clipTo(maxOffset: number): Promise<void> {
    return this.#change((entries) => entries.filter((e) => e.startOffset <= maxOffset));
  }

  /** Drops every entry (a replica whose log is empty starts its history afresh). */
  clear(): Promise<void> {
    return this.#change(() => []);
  }

  /** findConsistentPoint() with this file as one side. */
  findConsistentPoint(
    other: readonly EpochEntry[],
    myMaxOffset: number,
    otherMaxOffset: number,
  ): number {
    return findConsistentPoint(this.#entries, myMaxOffset, other, otherMaxOffset);
  }

  #change(f: (entries: readonly EpochEntry[]) => EpochEntry[]): Promise<void> {
    const run = this.#writing.then(async () => {
      const next = f(this.#entries);
      if (sameEntries(next, this.#entries)) return;
      await writeFileAtomic(this.files, this.path, encodeEpochFile(next));
      this.#entries = next;
    });
    this.#writing = run.catch(() => {});
    return run;
  }
}

/**
 * Where two replicas' logs stop being known equal (EpochFileCache.findConsistentPoint):
 * the highest epoch both hold with the same start offset, at the lesser of the two ends of
 * that epoch, never past either log's end. An entry ends where the next begins; the last
 * ends at its log's max offset. -1 when they share no epoch.
 */
export function findConsistentPoint(
  mine: readonly EpochEntry[],
  myMaxOffset: number,
  other: readonly EpochEntry[],
  otherMaxOffset: number,
): number {
  for (let i = mine.length - 1; i >= 0; i--) {
    const j = other.findIndex((e) => e.epoch === mine[i].epoch);
    if (j < 0 || other[j].startOffset !== mine[i].startOffset) continue;
    const myEnd = mine[i + 1]?.startOffset ?? myMaxOffset;
    const otherEnd = other[j + 1]?.startOffset ?? otherMaxOffset;
    // Equal (epoch, start) means one master wrote both from the same history, so even a log
    // that ends before that start (data lost in a crash) agrees up to its end.
    return Math.min(myEnd, otherEnd, myMaxOffset, otherMaxOffset);
  }
  return -1;
}

export function encodeEpochFile(entries: readonly EpochEntry[]): Uint8Array {
  const lines = entries.map((e) => `${e.epoch}-${e.startOffset}\n`).join("");
  const crc = crc32(encoder.encode(lines)) & 0x7fffffff;
  return encoder.encode(`${entries.length}\n${crc}\n${lines}`);
}

export function parseEpochFile(bytes: Uint8Array, path: string): EpochEntry[] {
  const corrupt = (why: string) =>
    new ReplicaError("EPOCH_FILE_CORRUPT", `Cannot read epoch file ${path} as ${why}`);
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw corrupt("it is not UTF-8 text");
  }
  const first = text.indexOf("\n");
  const second = first < 0 ? -1 : text.indexOf("\n", first + 1);
  if (second < 0) throw corrupt("it lacks the count and CRC lines");
  const count = text.slice(0, first), crc = text.slice(first + 1, second);
  const body = text.slice(second + 1);
  if (!/^\d{1,9}$/.test(count) || !/^\d{1,10}$/.test(crc)) {
    throw corrupt("its count or CRC line is not a number");
  }
  if ((crc32(encoder.encode(body)) & 0x7fffffff) !== Number(crc)) {
    throw corrupt(`its CRC ${crc} does not match the entries`);
  }
  const lines = body === "" ? [] : body.slice(0, -1).split("\n");
  if (!body.endsWith("\n") && body !== "") throw corrupt("its last line is incomplete");
  if (lines.length !== Number(count)) {
    throw corrupt(`it counts ${count} entries but holds ${lines.length}`);
  }
  const entries: EpochEntry[] = [];
  for (const line of lines) {
    const m = /^(\d{1,10})-(\d{1,16})$/.exec(line);
    if (!m) throw corrupt(`line ${JSON.stringify(line.slice(0, 60))} is not epoch-startOffset`);
    const entry = { epoch: Number(m[1]), startOffset: Number(m[2]) };
    const last = entries.at(-1);
    if (
      entry.epoch < 1 || entry.epoch > EPOCH_MAX || !Number.isSafeInteger(entry.startOffset) ||
      (last && (entry.epoch <= last.epoch || entry.startOffset < last.startOffset))
    ) {
      throw corrupt(`entry ${line} does not follow the previous one`);
    }
    entries.push(entry);
  }
  return entries;
}

function checkEntry(epoch: number, startOffset: number) {
  if (
    !Number.isInteger(epoch) || epoch < 1 || epoch > EPOCH_MAX ||
    !Number.isSafeInteger(startOffset) || startOffset < 0
  ) {
    throw new ReplicaError(
      "EPOCH_ILLEGAL",
      `Cannot append epoch ${epoch} at offset ${startOffset}: epochs are 1-${EPOCH_MAX}, offsets non-negative`,
    );
  }
}

function sameEntries(a: readonly EpochEntry[], b: readonly EpochEntry[]): boolean {
  return a.length === b.length &&
    a.every((e, i) => e.epoch === b[i].epoch && e.startOffset === b[i].startOffset);
}
