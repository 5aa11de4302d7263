// One syncfs(2) instead of thousands of fdatasyncs, on Bun. Bun runs node:fs callbacks on
// a small thread pool (sized once at start by UV_THREADPOOL_SIZE), so the 8,000 fdatasyncs
// of a stop after traffic over 1,000 topics × 8 queues waited in line for 1–8 s, where
// Deno's pool took 0.2–2.5 s and one syncfs of the same files 40–160 ms (bench/README.md,
// "shutdown_1000_topics_ms"). syncfs writes back everything on the data folder's filesystem
// and commits its journal once; since Linux 5.8 it reports a write-back error that happened
// after its descriptor was opened, so the descriptor is opened when the store opens. The
// call blocks its thread, so it runs on a worker thread (started on demand, ended when idle);
// where no worker starts it runs here. The storage side: ConsumeQueueStore.datasyncAll.
import * as fs from "node:fs";
import type { FsSync } from "../../storage/file_port.ts";
import { NodeFilePort } from "../../storage/node_fs_port.ts";

/** An idle worker ends after this long (it costs ~1.5 MiB of RSS while it lives). */
const WORKER_IDLE_MS = 10_000;

// Tried in turn: glibc, then musl (Alpine) on x86-64 and arm64.
const LIBC = ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"];
const SYMBOLS = {
  syncfs: { args: ["i32"], returns: "i32" },
  __errno_location: { args: [], returns: "ptr" },
};

interface Libc {
  syncfs(fd: number): number;
  errno(): number;
}

// deno-lint-ignore no-explicit-any
function openLibc(ffi: any): Libc {
  let lastErr: unknown;
  for (const name of LIBC) {
    try {
      const lib = ffi.dlopen(name, SYMBOLS);
      return {
        syncfs: (fd) => lib.symbols.syncfs(fd),
        errno: () => ffi.read.i32(lib.symbols.__errno_location(), 0),
      };
    } catch (err) {
      lastErr = err;
    }
  }
  throw lastErr;
}

// The worker: the same lookup, then one syncfs per message ([id, fd] → [id, 0 | errno]).
const WORKER_CODE = `const ffi = await import("bun:ffi");
const SYMBOLS = ${JSON.stringify(SYMBOLS)};
let lib;
for (const name of ${JSON.stringify(LIBC)}) {
  try { lib = ffi.dlopen(name, SYMBOLS); break; } catch {}
}
self.onmessage = (e) => {
  const [id, fd] = e.data;
  const rc = lib.symbols.syncfs(fd);
  self.postMessage([id, rc === 0 ? 0 : ffi.read.i32(lib.symbols.__errno_location(), 0) || -1]);
};
self.postMessage([0, 0]);`;

/** syncfs calls, on a worker thread when one starts, else on this one. */
class SyncfsRunner {
  #worker: Worker | undefined;
  #ready: Promise<boolean> | undefined;
  #waiting = new Map<number, (errno: number) => void>();
  #nextId = 1;
  #idle: ReturnType<typeof setTimeout> | undefined;
  #url: string | undefined;
  /** Calls made, and how many ran on a worker (tests). */
  readonly stats = { calls: 0, onWorker: 0 };

  constructor(private readonly libc: Libc) {}

  async syncfs(fd: number): Promise<number> {
    this.stats.calls++;
    clearTimeout(this.#idle);
    if (await this.#start()) {
      this.stats.onWorker++;
      const id = this.#nextId++;
      const errno = await new Promise<number>((r) => {
        this.#waiting.set(id, r);
        this.#worker!.postMessage([id, fd]);
      });
      if (this.#waiting.size === 0) this.#idleLater();
      return errno;
    }
    return this.libc.syncfs(fd) === 0 ? 0 : this.libc.errno() || -1;
  }

  close(): void {
    clearTimeout(this.#idle);
    this.#worker?.terminate();
    this.#worker = this.#ready = undefined;
    for (const r of this.#waiting.values()) r(-1);
    this.#waiting.clear();
  }

  #start(): Promise<boolean> {
    this.#ready ??= new Promise<boolean>((resolve) => {
      try {
        this.#url ??= URL.createObjectURL(
          new Blob([WORKER_CODE], { type: "application/javascript" }),
        );
        const worker = new Worker(this.#url, { type: "module" });
        // deno-lint-ignore no-explicit-any
        (worker as any).unref?.(); // never what keeps the process alive
        worker.onmessage = (e: MessageEvent<[number, number]>) => {
          const [id, errno] = e.data;
          if (id === 0) return resolve(true);
          this.#waiting.get(id)?.(errno);
          this.#waiting.delete(id);
        };
        worker.onerror = (e) => {
          e.preventDefault?.();
          resolve(false); // before "ready": this thread makes the calls
          this.close();
        };
        this.#worker = worker;
      } catch {
        resolve(false);
      }
    });
    return this.#ready;
  }

  #idleLater(): void {
    this.#idle = setTimeout(() => {
      if (this.#waiting.size === 0) this.close();
    }, WORKER_IDLE_MS);
    // deno-lint-ignore no-explicit-any
    (this.#idle as any).unref?.();
  }
}

/** Bun's file port: NodeFilePort plus FsSync once libc's syncfs is found (loaded in the
 * background; until then, and off Linux, every sync is a per-file fdatasync). */
export class BunFilePort extends NodeFilePort {
  #runner: SyncfsRunner | undefined;

  constructor() {
    super();
    // A computed specifier keeps Deno from resolving the bun: scheme while loading this file.
    const ffi = "bun:ffi";
    import(ffi).then((m) => this.#runner = new SyncfsRunner(openLibc(m)), () => {});
  }

  /** The runner, once syncfs is found (tests). */
  get syncfs(): SyncfsRunner | undefined {
    return this.#runner;
  }

  openFsSync(dir: string): FsSync | undefined {
    const runner = this.#runner;
    if (!runner) return undefined;
    const fd = fs.openSync(dir, "r");
    let open = true;
    return {
      async sync() {
        if (!open) throw new Error(`syncfs of ${dir}: closed`);
        const errno = await runner.syncfs(fd);
        if (errno !== 0) throw new Error(`syncfs of ${dir} failed (errno ${errno})`);
      },
      close() {
        if (open) fs.closeSync(fd);
        open = false;
      },
    };
  }
}
