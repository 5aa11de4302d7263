// Same-run baselines for the CommitLog bench: the thinnest node:fs loops that do the work
// the store does, on the same disk, in the same process. A store figure is quoted as a
// ratio to one of these, which survives the 20-50% run-to-run spread of this VM
// (reference/performance.md, "Noise and caveats").
import * as fs from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { Progress, type Rate, rateOf } from "../support.ts";

const ZERO_CHUNK_BYTES = 4 * 1024 * 1024;
const SCAN_BLOCK_BYTES = 1024 * 1024;

/**
 * How the file is made before the timed loop. "sparse": created full length with
 * ftruncate, as Segment.create makes a CommitLog segment (blocks are allocated by the
 * writes). "zeroed": then written with zeros and synced, as the store's background
 * zero-fill prepares the *next* segment (reference/performance.md: pre-written blocks
 * take page-cache writes and fdatasync faster).
 */
export type FileKind = "sparse" | "zeroed";

function prepareFile(path: string, bytes: number, kind: FileKind): number {
  const fd = fs.openSync(path, "w+");
  fs.ftruncateSync(fd, bytes);
  if (kind === "zeroed") {
    const zeros = new Uint8Array(Math.min(ZERO_CHUNK_BYTES, bytes));
    for (let at = 0; at < bytes; at += zeros.length) {
      fs.writeSync(fd, zeros, 0, Math.min(zeros.length, bytes - at), at);
    }
  }
  fs.fdatasyncSync(fd);
  return fd;
}

function writeFull(fd: number, bytes: Uint8Array, position: number) {
  let done = 0;
  while (done < bytes.length) {
    done += fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
  }
}

/** `count` positional writeSyncs of `record` into a pre-allocated file; no sync. */
export function rawWriteLoop(dir: string, record: Uint8Array, count: number, kind: FileKind): Rate {
  const path = join(dir, `raw-write-${kind}`);
  const fd = prepareFile(path, count * record.length, kind);
  const progress = new Progress(`raw writeSync (${kind})`, count);
  try {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      writeFull(fd, record, i * record.length);
      progress.tick();
    }
    return rateOf(count, start);
  } finally {
    fs.closeSync(fd);
    // Removing the file drops its dirty pages, so they do not weigh on later phases.
    fs.rmSync(path, { force: true });
  }
}

/** `count` rounds of one write of `record` and one fdatasyncSync: durability with no batching. */
export function serialFsyncLoop(
  dir: string,
  record: Uint8Array,
  count: number,
  kind: FileKind,
): Rate {
  const path = join(dir, `raw-fsync-${kind}`);
  const fd = prepareFile(path, count * record.length, kind);
  const progress = new Progress(`serial write+fdatasync (${kind})`, count);
  try {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      writeFull(fd, record, i * record.length);
      fs.fdatasyncSync(fd);
      progress.tick();
    }
    return rateOf(count, start);
  } finally {
    fs.closeSync(fd);
    fs.rmSync(path, { force: true });
  }
}

/** `count` positional readSyncs of `size` bytes, one after another from `path`'s start. */
export function rawReadLoop(path: string, size: number, count: number): Rate {
  const fd = fs.openSync(path, "r");
  const buffer = new Uint8Array(size);
  const progress = new Progress("raw readSync", count);
  try {
    const start = performance.now();
    for (let i = 0; i < count; i++) {
      if (fs.readSync(fd, buffer, 0, size, i * size) !== size) {
        throw new Error(`Cannot read ${size} bytes at ${i * size} of ${path}: short file`);
      }
      progress.tick();
    }
    return rateOf(count, start);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Reads `bytes` from the start of the given files in 1 MiB blocks and CRCs each block:
 * what a recovery scan must at least do, without parsing or dispatch. Rate is bytes/s.
 */
export function rawScan(paths: string[], bytes: number): Rate {
  const block = new Uint8Array(SCAN_BLOCK_BYTES);
  let left = bytes;
  const start = performance.now();
  for (const path of paths) {
    if (left <= 0) break;
    const fd = fs.openSync(path, "r");
    try {
      for (let at = 0; left > 0; at += block.length) {
        const n = fs.readSync(fd, block, 0, Math.min(block.length, left), at);
        if (n === 0) break;
        crc32(block.subarray(0, n)); // a native call: not optimised away
        left -= n;
      }
    } finally {
      fs.closeSync(fd);
    }
  }
  return rateOf(bytes - left, start);
}
