// A simulated disk that keeps synced and unsynced state apart, so tests can cut the
// power (reference/reliability.md §4.6, a small in-process LazyFS):
//  - every file has a durable image and a list of operations since its last datasync;
//  - names (creations, renames, removals) are durable only after syncDir of their folder;
//  - crash() builds the disk a reboot would find: durable images plus, by policy, a prefix
//    of the unsynced operations with the last one torn at a random byte;
//  - failDatasync() makes the next fdatasync of a file fail with EIO and, as Linux does,
//    forget its dirty data (the page stays readable but is never made durable);
//  - with `fsSync`, openFsSync() gives a whole-disk sync (Linux syncfs): every file's data
//    and every name durable at once; failFsSync() makes the next one fail and forget all
//    dirty data, as failDatasync() does for one file;
//  - a capacity (setCapacity) makes a write that needs more 4 KiB pages than are free land
//    as far as they go and then fail with ENOSPC, as a full filesystem does. Files are
//    sparse: growing one with truncate takes no pages, shrinking it frees them.
// Folders themselves are always durable (a simplification, stated here).
import type { DiskSpace, FileHandle, FilePort, FsSync } from "./file_port.ts";
import { dirName } from "./file_port.ts";

const PAGE_BYTES = 4096;

type Op = { kind: "write"; position: number; bytes: Uint8Array } | {
  kind: "truncate";
  length: number;
};

class Inode {
  current: Uint8Array = new Uint8Array(0);
  durable: Uint8Array = new Uint8Array(0);
  pending: Op[] = [];
  modifiedMs = 0;
  /** Pages holding data (written since creation or the last shrink). */
  pages = new Set<number>();

  static apply(image: Uint8Array, op: Op): Uint8Array {
    if (op.kind === "truncate") {
      const out = new Uint8Array(op.length);
      out.set(image.subarray(0, Math.min(op.length, image.length)));
      return out;
    }
    const end = op.position + op.bytes.length;
    let out = image;
    if (end > image.length) {
      out = new Uint8Array(end);
      out.set(image);
    }
    out.set(op.bytes, op.position);
    return out;
  }
}

export type CrashPolicy = "drop-unsynced" | "torn-tail";

export interface CrashOptions {
  policy: CrashPolicy;
  /** Deterministic choice of what survives; tests print it on failure. */
  random: () => number;
  /** Keep each unsynced name change with this probability (default 0: all lost). */
  keepUnsyncedNamesRatio?: number;
}

export class SimDiskError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export class SimDisk implements FilePort {
  #names = new Map<string, Inode>();
  #durableNames = new Map<string, Inode>();
  #dirs = new Set<string>(["/", "."]);
  #generation = 0;
  #failDatasync = new Set<string>();
  #nowMs: () => number;
  #capacityBytes: number | undefined;
  #fsSync: boolean;
  #failFsSync = false;
  /** Counters for tests and benchmarks. */
  readonly stats = { datasyncs: 0, writes: 0, dirSyncs: 0, reads: 0, fsSyncs: 0 };

  constructor(options: { nowMs?: () => number; fsSync?: boolean } = {}) {
    this.#nowMs = options.nowMs ?? (() => 0);
    this.#fsSync = options.fsSync ?? false;
  }

  /** With the `fsSync` option: a sync of the whole disk, as syncfs(2). */
  openFsSync(_dir: string): FsSync | undefined {
    if (!this.#fsSync) return undefined;
    const generation = this.#generation;
    return {
      sync: () => {
        this.checkGeneration(generation);
        this.stats.fsSyncs++;
        const failed = this.#failFsSync;
        this.#failFsSync = false;
        for (const inode of new Set(this.#names.values())) {
          if (!failed) {
            for (const op of inode.pending) inode.durable = Inode.apply(inode.durable, op);
          }
          inode.pending = [];
        }
        if (failed) return Promise.reject(new SimDiskError("EIO", "Input/output error on syncfs"));
        this.#durableNames = new Map(this.#names);
        return Promise.resolve();
      },
      close: () => {},
    };
  }

  /** The next whole-disk sync fails with EIO and every file's unsynced data is never made
   * durable. */
  failFsSync(): void {
    this.#failFsSync = true;
  }

  get generation(): number {
    return this.#generation;
  }

  open(path: string, options: { create?: boolean } = {}): FileHandle {
    let inode = this.#names.get(path);
    if (!inode) {
      if (!options.create) throw new SimDiskError("ENOENT", `No such file: ${path}`);
      if (!this.#dirs.has(dirName(path))) {
        throw new SimDiskError("ENOENT", `No such folder: ${dirName(path)}`);
      }
      inode = new Inode();
      inode.modifiedMs = this.#nowMs();
      this.#names.set(path, inode);
    }
    return new SimFile(this, path, inode, this.#generation);
  }
  exists(path: string): boolean {
    return this.#names.has(path) || this.#dirs.has(path);
  }
  list(dir: string): string[] {
    const prefix = dir.endsWith("/") ? dir : `${dir}/`;
    const out = new Set<string>();
    for (const p of [...this.#names.keys(), ...this.#dirs]) {
      if (p.startsWith(prefix) && p.length > prefix.length) {
        out.add(p.slice(prefix.length).split("/")[0]);
      }
    }
    return [...out].sort();
  }
  mkdirp(dir: string): void {
    let p = dir;
    while (p !== "/" && p !== "." && !this.#dirs.has(p)) {
      this.#dirs.add(p);
      p = dirName(p);
    }
  }
  remove(path: string): void {
    this.#names.delete(path);
  }
  removeTree(dir: string): void {
    const prefix = `${dir}/`;
    for (const p of [...this.#names.keys()]) if (p.startsWith(prefix)) this.#names.delete(p);
    for (const p of [...this.#dirs]) if (p === dir || p.startsWith(prefix)) this.#dirs.delete(p);
    for (const p of [...this.#durableNames.keys()]) {
      if (p.startsWith(prefix)) this.#durableNames.delete(p);
    }
  }
  rename(from: string, to: string): void {
    const inode = this.#names.get(from);
    if (!inode) throw new SimDiskError("ENOENT", `No such file: ${from}`);
    this.#names.delete(from);
    this.#names.set(to, inode);
  }
  syncDir(dir: string): Promise<void> {
    this.stats.dirSyncs++;
    for (const p of new Set([...this.#names.keys(), ...this.#durableNames.keys()])) {
      if (dirName(p) !== dir) continue;
      const inode = this.#names.get(p);
      if (inode) this.#durableNames.set(p, inode);
      else this.#durableNames.delete(p);
    }
    return Promise.resolve();
  }
  modifiedMs(path: string): number {
    const inode = this.#names.get(path);
    if (!inode) throw new SimDiskError("ENOENT", `No such file: ${path}`);
    return inode.modifiedMs;
  }

  /** The next datasync of `path` fails with EIO and its unsynced data is never made durable. */
  failDatasync(path: string): void {
    this.#failDatasync.add(path);
  }

  /** Limits the pages files may hold (undefined: no limit); lowering it frees nothing. */
  setCapacity(bytes: number | undefined): void {
    this.#capacityBytes = bytes;
  }

  /** Bytes held by the pages of every named file. */
  get usedBytes(): number {
    const inodes = new Set(this.#names.values());
    let pages = 0;
    for (const inode of inodes) pages += inode.pages.size;
    return pages * PAGE_BYTES;
  }

  diskSpace(_dir: string): DiskSpace | undefined {
    if (this.#capacityBytes === undefined) return undefined;
    const freeBytes = Math.max(0, this.#capacityBytes - this.usedBytes);
    return { totalBytes: this.#capacityBytes, freeBytes };
  }

  /** Bytes the file holds after a crash with nothing unsynced kept (for assertions). */
  durableBytes(path: string): Uint8Array | undefined {
    return this.#durableNames.get(path)?.durable;
  }

  /**
   * Cuts the power. Handles opened before the crash throw from now on; the disk then holds
   * what a reboot would find.
   */
  crash(options: CrashOptions): void {
    const keepNames = options.keepUnsyncedNamesRatio ?? 0;
    const names = new Map<string, Inode>();
    for (const [path, inode] of this.#durableNames) names.set(path, inode);
    for (const [path, inode] of this.#names) {
      if (!this.#durableNames.has(path) && options.random() < keepNames) names.set(path, inode);
    }
    for (const path of this.#durableNames.keys()) {
      if (!this.#names.has(path) && options.random() < keepNames) names.delete(path);
    }
    const seen = new Set<Inode>();
    for (const inode of names.values()) {
      if (seen.has(inode)) continue;
      seen.add(inode);
      let image = inode.durable;
      if (options.policy === "torn-tail" && inode.pending.length > 0) {
        const keep = Math.floor(options.random() * (inode.pending.length + 1));
        for (let i = 0; i < keep; i++) {
          const op = inode.pending[i];
          if (i === keep - 1 && op.kind === "write" && op.bytes.length > 1) {
            const cut = 1 + Math.floor(options.random() * (op.bytes.length - 1));
            image = Inode.apply(image, { ...op, bytes: op.bytes.subarray(0, cut) });
          } else {
            image = Inode.apply(image, op);
          }
        }
      }
      inode.durable = image;
      inode.current = image.slice();
      inode.pending = [];
      inode.pages = pagesWithData(image);
    }
    this.#names = new Map(names);
    this.#durableNames = new Map(names);
    this.#failDatasync.clear();
    this.#failFsSync = false;
    this.#generation++;
  }

  /** @internal used by SimFile */
  checkGeneration(generation: number) {
    if (generation !== this.#generation) {
      throw new SimDiskError("EBADF", "File handle belongs to a disk that crashed");
    }
  }
  /** @internal */
  record(inode: Inode, op: Op) {
    if (op.kind === "truncate") {
      const keep = Math.ceil(op.length / PAGE_BYTES);
      for (const page of [...inode.pages]) if (page >= keep) inode.pages.delete(page);
    } else if (op.bytes.length > 0) {
      const fits = this.#allocate(inode, op.position, op.bytes.length);
      if (fits < op.bytes.length) {
        if (fits > 0) this.#apply(inode, { ...op, bytes: op.bytes.subarray(0, fits) });
        throw new SimDiskError("ENOSPC", "No space left on device");
      }
    }
    this.#apply(inode, op);
  }

  /** Takes the pages a write needs, in order; returns how many of its bytes have a page. */
  #allocate(inode: Inode, position: number, length: number): number {
    const end = position + length;
    let free = this.#capacityBytes === undefined
      ? Infinity
      : Math.floor((this.#capacityBytes - this.usedBytes) / PAGE_BYTES);
    for (let page = Math.floor(position / PAGE_BYTES); page * PAGE_BYTES < end; page++) {
      if (inode.pages.has(page)) continue;
      if (free <= 0) return Math.max(0, page * PAGE_BYTES - position);
      inode.pages.add(page);
      free--;
    }
    return length;
  }

  #apply(inode: Inode, op: Op) {
    inode.current = Inode.apply(inode.current, op);
    inode.pending.push(op);
    inode.modifiedMs = this.#nowMs();
    if (op.kind === "write") this.stats.writes++;
  }
  /** @internal */
  datasync(path: string, inode: Inode): Promise<void> {
    this.stats.datasyncs++;
    if (this.#failDatasync.delete(path)) {
      inode.pending = [];
      return Promise.reject(new SimDiskError("EIO", `Input/output error on fdatasync of ${path}`));
    }
    for (const op of inode.pending) inode.durable = Inode.apply(inode.durable, op);
    inode.pending = [];
    return Promise.resolve();
  }
}

function pagesWithData(image: Uint8Array): Set<number> {
  const pages = new Set<number>();
  for (let at = 0; at < image.length; at += PAGE_BYTES) {
    if (image.subarray(at, at + PAGE_BYTES).some((b) => b !== 0)) pages.add(at / PAGE_BYTES);
  }
  return pages;
}

class SimFile implements FileHandle {
  constructor(
    private readonly disk: SimDisk,
    readonly path: string,
    private readonly inode: Inode,
    private readonly generation: number,
  ) {}
  readAt(buffer: Uint8Array, offset: number, length: number, position: number): number {
    this.disk.checkGeneration(this.generation);
    this.disk.stats.reads++;
    const image = this.inode.current;
    if (position >= image.length) return 0;
    const n = Math.min(length, image.length - position);
    buffer.set(image.subarray(position, position + n), offset);
    return n;
  }
  writeAt(bytes: Uint8Array, position: number): void {
    this.disk.checkGeneration(this.generation);
    this.disk.record(this.inode, { kind: "write", position, bytes: bytes.slice() });
  }
  writeAtAsync(bytes: Uint8Array, position: number): Promise<void> {
    try {
      this.writeAt(bytes, position);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }
  datasync(): Promise<void> {
    try {
      this.disk.checkGeneration(this.generation);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.disk.datasync(this.path, this.inode);
  }
  truncate(length: number): void {
    this.disk.checkGeneration(this.generation);
    this.disk.record(this.inode, { kind: "truncate", length });
  }
  size(): number {
    this.disk.checkGeneration(this.generation);
    return this.inode.current.length;
  }
  close(): void {}
}
