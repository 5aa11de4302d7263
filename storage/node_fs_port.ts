// The real disk, through the synchronous `node:fs` calls that behave alike on Deno
// and Bun (reference/runtimes.md, "Portable subset"). Only fdatasync/fsync go off
// the event loop (libuv thread pool): a sync costs milliseconds, a write microseconds.
import * as fs from "node:fs";
import type { DiskSpace, FileHandle, FilePort } from "./file_port.ts";

function syncOffLoop(fd: number, data: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: NodeJS.ErrnoException | null) => err ? reject(err) : resolve();
    if (data) fs.fdatasync(fd, done);
    else fs.fsync(fd, done);
  });
}

class NodeFile implements FileHandle {
  #fd: number;
  constructor(readonly path: string, fd: number) {
    this.#fd = fd;
  }
  readAt(buffer: Uint8Array, offset: number, length: number, position: number): number {
    return fs.readSync(this.#fd, buffer, offset, length, position);
  }
  writeAt(bytes: Uint8Array, position: number): void {
    let done = 0;
    while (done < bytes.byteLength) {
      done += fs.writeSync(this.#fd, bytes, done, bytes.byteLength - done, position + done);
    }
  }
  async writeAtAsync(bytes: Uint8Array, position: number): Promise<void> {
    let done = 0;
    while (done < bytes.byteLength) {
      done += await new Promise<number>((resolve, reject) =>
        fs.write(
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
    fs.ftruncateSync(this.#fd, length);
  }
  size(): number {
    return fs.fstatSync(this.#fd).size;
  }
  close(): void {
    fs.closeSync(this.#fd);
  }
}

export class NodeFilePort implements FilePort {
  open(path: string, options: { create?: boolean } = {}): FileHandle {
    let fd: number;
    try {
      fd = fs.openSync(path, "r+");
    } catch (err) {
      if (!options.create || (err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      fd = fs.openSync(path, "w+");
    }
    return new NodeFile(path, fd);
  }
  exists(path: string): boolean {
    return fs.existsSync(path);
  }
  list(dir: string): string[] {
    if (!fs.existsSync(dir)) return [];
    return fs.readdirSync(dir).sort();
  }
  /** One mkdir when the parent exists (a ConsumeQueue's folder under its topic's): Deno's
   * recursive mkdirSync first stats its way up, each missing level a thrown NotFound, which
   * was half of creating a queue's file (~105 of ~210 µs; bench/README.md, Round 5). */
  mkdirp(dir: string): void {
    try {
      fs.mkdirSync(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EEXIST" && fs.statSync(dir).isDirectory()) return;
      if (code !== "ENOENT") throw err;
      fs.mkdirSync(dir, { recursive: true });
    }
  }
  remove(path: string): void {
    fs.rmSync(path, { force: true });
  }
  removeTree(dir: string): void {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  rename(from: string, to: string): void {
    fs.renameSync(from, to);
  }
  async syncDir(dir: string): Promise<void> {
    const fd = fs.openSync(dir, "r");
    try {
      await syncOffLoop(fd, false);
    } finally {
      fs.closeSync(fd);
    }
  }
  modifiedMs(path: string): number {
    return fs.statSync(path).mtimeMs;
  }
  diskSpace(dir: string): DiskSpace | undefined {
    try {
      const s = fs.statfsSync(dir);
      return { totalBytes: s.blocks * s.bsize, freeBytes: s.bavail * s.bsize };
    } catch {
      return undefined;
    }
  }
}
