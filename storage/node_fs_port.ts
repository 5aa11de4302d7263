// The real disk, through the synchronous `node:fs` calls that behave alike on Deno
// and Bun (reference/runtimes.md, "Portable subset"). Only fdatasync/fsync go off
// the event loop (libuv thread pool): a sync costs milliseconds, a write microseconds.
import process from "node:process";
import type * as NodeFs from "node:fs";
import type { DiskSpace, FileHandle, FilePort } from "./file_port.ts";

/** node:fs on first use: a process that opens no file (split-mode functions) never loads
 * it, and on Deno its Node layer costs ~15 ms of a cold start (bench/README.md, noon). */
let nodeFs: typeof NodeFs | undefined;
const fsOf = (): typeof NodeFs => nodeFs ??= process.getBuiltinModule("node:fs") as typeof NodeFs;

function syncOffLoop(fd: number, data: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: NodeJS.ErrnoException | null) => err ? reject(err) : resolve();
    if (data) fsOf().fdatasync(fd, done);
    else fsOf().fsync(fd, done);
  });
}

class NodeFile implements FileHandle {
  #fd: number;
  constructor(readonly path: string, fd: number) {
    this.#fd = fd;
  }
  readAt(buffer: Uint8Array, offset: number, length: number, position: number): number {
    return fsOf().readSync(this.#fd, buffer, offset, length, position);
  }
  writeAt(bytes: Uint8Array, position: number): void {
    let done = 0;
    while (done < bytes.byteLength) {
      done += fsOf().writeSync(this.#fd, bytes, done, bytes.byteLength - done, position + done);
    }
  }
  async writeAtAsync(bytes: Uint8Array, position: number): Promise<void> {
    let done = 0;
    while (done < bytes.byteLength) {
      done += await new Promise<number>((resolve, reject) =>
        fsOf().write(
          this.#fd,
          bytes,
          done,
          bytes.byteLength - done,
          position + done,
          (err, n) => err ? reject(err) : resolve(n),
        )
      );
    }
  }
  datasync(): Promise<void> {
    return syncOffLoop(this.#fd, true);
  }
  truncate(length: number): void {
    fsOf().ftruncateSync(this.#fd, length);
  }
  size(): number {
    return fsOf().fstatSync(this.#fd).size;
  }
  close(): void {
    fsOf().closeSync(this.#fd);
  }
}

export class NodeFilePort implements FilePort {
  open(path: string, options: { create?: boolean } = {}): FileHandle {
    let fd: number;
    try {
      fd = fsOf().openSync(path, "r+");
    } catch (err) {
      if (!options.create || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      fd = fsOf().openSync(path, "w+");
    }
    return new NodeFile(path, fd);
  }
  exists(path: string): boolean {
    return fsOf().existsSync(path);
  }
  list(dir: string): string[] {
    if (!fsOf().existsSync(dir)) return [];
    return fsOf().readdirSync(dir).sort();
  }
  /** One mkdir when the parent exists (a ConsumeQueue's folder under its topic's): Deno's
   * recursive mkdirSync first stats its way up, each missing level a thrown NotFound, which
   * was half of creating a queue's file (~105 of ~210 µs; bench/README.md, Round 5). */
  mkdirp(dir: string): void {
    try {
      fsOf().mkdirSync(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST" && fsOf().statSync(dir).isDirectory()) return;
      if (code !== "ENOENT") throw err;
      fsOf().mkdirSync(dir, { recursive: true });
    }
  }
  remove(path: string): void {
    fsOf().rmSync(path, { force: true });
  }
  removeTree(dir: string): void {
    fsOf().rmSync(dir, { recursive: true, force: true });
  }
  rename(from: string, to: string): void {
    fsOf().renameSync(from, to);
  }
  async syncDir(dir: string): Promise<void> {
    const fd = fsOf().openSync(dir, "r");
    try {
      await syncOffLoop(fd, false);
    } finally {
      fsOf().closeSync(fd);
    }
  }
  modifiedMs(path: string): number {
    return fsOf().statSync(path).mtimeMs;
  }
  diskSpace(dir: string): DiskSpace | undefined {
    try {
      const s = fsOf().statfsSync(dir);
      return { totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
    } catch {
      return undefined;
    }
  }
}
