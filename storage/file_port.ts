// The file interface storage consumes. Storage never touches `node:fs`, `Deno.*`
// or `Bun.*` itself: the platform hands it a FilePort, the real disk in production
// (node_fs_port.ts) and the simulated disk in tests (sim_disk.ts), so that power
// loss, torn writes and failed fdatasyncs can be produced on demand.

export interface FileHandle {
  readonly path: string;
  /** Reads up to `length` bytes at `position` into `buffer[offset..]`; returns bytes read (0 at end). */
  readAt(buffer: Uint8Array, offset: number, length: number, position: number): number;
  /**
   * Writes all of `bytes` at `position` (loops over short writes). Not durable until
   * datasync. Keeps no reference to `bytes`: the CommitLog reuses its write buffer.
   */
  writeAt(bytes: Uint8Array, position: number): void;
  /** Like writeAt, but off the event loop (background work such as zero-filling). */
  writeAtAsync(bytes: Uint8Array, position: number): Promise<void>;
  /** fdatasync off the event loop. A rejection means the data may be lost: never retry it. */
  datasync(): Promise<void>;
  /** Sets the file length; growing fills with zeros. */
  truncate(length: number): void;
  size(): number;
  close(): void;
}

/** Everything written on one filesystem made durable in one call (Linux syncfs). Opened
 * when a store opens, so it reports write-back errors from then on (Linux ≥ 5.8). */
export interface FsSync {
  /** Rejects if anything written may be lost, as a failed fdatasync does. */
  sync(): Promise<void>;
  close(): void;
}

export interface FilePort {
  /** Opens for reading and writing; `create` makes a missing file (an unsynced name until syncDir). */
  open(path: string, options?: { create?: boolean }): FileHandle;
  exists(path: string): boolean;
  /** Names directly inside `dir` (files and folders), sorted; [] if `dir` is missing. */
  list(dir: string): string[];
  mkdirp(dir: string): void;
  remove(path: string): void;
  /** Removes a folder and everything below it. */
  removeTree(dir: string): void;
  rename(from: string, to: string): void;
  /** fsync of a directory: makes creations, renames and removals in it durable. */
  syncDir(dir: string): Promise<void>;
  /** Last modification time of a file, epoch ms (retention judges segment age by it). */
  modifiedMs(path: string): number;
  /** Size and free bytes of the filesystem holding `dir`; undefined when it cannot tell. */
  diskSpace?(dir: string): DiskSpace | undefined;
  /** Optional (a platform that has syncfs): one sync for `dir`'s whole filesystem, used
   * when many files need their fdatasync at once (ConsumeQueueStore.datasyncAll). */
  openFsSync?(dir: string): FsSync | undefined;
}

export interface DiskSpace {
  totalBytes: number;
  /** Bytes an unprivileged writer may still allocate (statfs f_bavail). */
  freeBytes: number;
}

/** Whether an error says the filesystem has no room (ENOSPC) or the quota is spent (EDQUOT). */
export function isNoSpace(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

export function joinPath(...parts: string[]): string {
  return parts.join("/").replace(/\/+/g, "/");
}

export function dirName(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? (i === 0 ? "/" : ".") : path.slice(0, i);
}

/** Reads exactly `length` bytes at `position`, or fewer only at end of file. */
export function readFully(file: FileHandle, position: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  const done = readFullyInto(file, position, out);
  return done === length ? out : out.subarray(0, done);
}

/** Fills `out` from `position`; returns the bytes read (fewer only at end of file). */
export function readFullyInto(file: FileHandle, position: number, out: Uint8Array): number {
  let done = 0;
  while (done < out.length) {
    const n = file.readAt(out, done, out.length - done, position + done);
    if (n === 0) return done;
    done += n;
  }
  return done;
}

/** Writes a small file durably and atomically: tmp, fdatasync, rename, fsync dir. */
export async function writeFileAtomic(files: FilePort, path: string, bytes: Uint8Array) {
  const tmp = `${path}.tmp`;
  const handle = files.open(tmp, { create: true });
  try {
    handle.truncate(0);
    handle.writeAt(bytes, 0);
    await handle.datasync();
  } finally {
    handle.close();
  }
  files.rename(tmp, path);
  await files.syncDir(dirName(path));
}

export function readWholeFile(files: FilePort, path: string): Uint8Array | null {
  if (!files.exists(path)) return null;
  const handle = files.open(path);
  try {
    return readFully(handle, 0, handle.size());
  } finally {
    handle.close();
  }
}
