// All ConsumeQueues of a store, under `root/consumequeue/<topic>/<queueId>/`.
import { setImmediate } from "node:timers";
import type { FilePort, FsSync } from "../file_port.ts";
import { joinPath } from "../file_port.ts";
import { ConsumeQueue } from "./consume_queue.ts";

/** fdatasync calls in flight at once over the queues: they run on the runtime's I/O threads,
 * and the file system commits concurrent syncs together. */
const SYNC_PARALLEL = 256;
/** Queues written between yields to the event loop before one filesystem sync: a queue's
 * first write creates its file (ms each under load), and 8,000 in one turn held the broker
 * for seconds. */
const WRITES_PER_TURN = 64;

/** Which queues a periodic checkpoint syncs (datasyncAll). */
export interface CqSyncPolicy {
  /** A queue with at least this many new units since its last sync… */
  leastUnits: number;
  /** …or one skipped by this many checkpoints already (≤ 0: every queue). */
  maxSkips: number;
}

/** Whether a periodic checkpoint syncs `cq` now; state not made by a put (zeroed or
 * padded units: recovery, truncation) always is. When not, the skip is counted. */
function dueForSync(cq: ConsumeQueue, policy: CqSyncPolicy): boolean {
  if (
    cq.unsyncedFrom === Infinity || cq.unsyncedUnits >= policy.leastUnits ||
    cq.skippedSyncs >= policy.maxSkips
  ) return true;
  cq.skippedSyncs++;
  return false;
}

export class ConsumeQueueStore {
  readonly #queues = new Map<string, Map<number, ConsumeQueue>>();
  readonly dir: string;
  #fsSync: FsSync | undefined;
  /** The store is closing: a sync of many queues takes one FsSync (see hurry()). */
  #closing = false;
  /** Syncs done as one filesystem sync (tests). */
  fsSyncs = 0;

  /** `fsSyncMinQueues`: at a stop, this many queues to sync (or more) take one FsSync where
   * the platform has it (store.consumeQueueFsSyncMinQueues); 0 never. */
  constructor(
    private readonly files: FilePort,
    rootDir: string,
    private readonly unitsPerFile: number,
    private readonly fsSyncMinQueues = 0,
  ) {
    this.dir = joinPath(rootDir, "consumequeue");
  }

  load(): void {
    this.files.mkdirp(this.dir);
    if (this.fsSyncMinQueues > 0) this.#fsSync ??= this.files.openFsSync?.(this.dir);
    for (const topic of this.files.list(this.dir)) {
      for (const queueName of this.files.list(joinPath(this.dir, topic))) {
        if (!/^\d+$/.test(queueName)) continue;
        const cq = this.#make(topic, Number(queueName));
        cq.load();
      }
    }
  }

  find(topic: string, queueId: number): ConsumeQueue | undefined {
    return this.#queues.get(topic)?.get(queueId);
  }

  getOrCreate(topic: string, queueId: number): ConsumeQueue {
    return this.find(topic, queueId) ?? this.#make(topic, queueId);
  }

  queuesOf(topic: string): ConsumeQueue[] {
    return [...(this.#queues.get(topic)?.values() ?? [])].sort((a, b) => a.queueId - b.queueId);
  }

  topics(): string[] {
    return [...this.#queues.keys()].sort();
  }

  *all(): Iterable<ConsumeQueue> {
    for (const byId of this.#queues.values()) yield* byId.values();
  }

  /** Largest end (offset + size) any queue points at: where dispatch has been. */
  maxPhysicOffset(): number {
    let max = 0;
    for (const cq of this.all()) max = Math.max(max, cq.maxPhysicOffset);
    return max;
  }

  /**
   * Syncs the queues with something to sync, SYNC_PARALLEL at a time: one after another,
   * 8,000 queues (1,000 topics of 8) took over 10 s of fdatasync round trips at shutdown
   * (bench/runtime). With a `policy`, only the queues due (CqSyncPolicy): RocketMQ's
   * flushConsumeQueueLeastPages, so a checkpoint's syncs follow the pages written, not the
   * queues touched. Returns the CommitLog offset below which every queue's units are
   * durable as far as the skipped queues go (Infinity when none was skipped). Once the
   * store is closing (hurry()), fsSyncMinQueues due or more with an FsSync take one
   * filesystem sync, and a sync already running hands its remaining queues to one: Bun's
   * node:fs thread pool is small, and 8,000 fdatasyncs there took 1–8 s where one syncfs
   * took 40–160 ms (bench/README.md, shutdown_1000_topics_ms). Only at a stop: periodic
   * checkpoints that used it cut produces over 1,000 topics from ~6,700/s to 400–1,700/s.
   */
  async datasyncAll(policy?: CqSyncPolicy): Promise<number> {
    let durableBelow = Infinity;
    const due: ConsumeQueue[] = [];
    for (const cq of this.all()) {
      if (!cq.needsSync) continue;
      if (!policy || dueForSync(cq, policy)) due.push(cq);
      else durableBelow = Math.min(durableBelow, cq.unsyncedFrom);
    }
    const atOnce = () => this.#fsSync && this.#closing && due.length >= this.fsSyncMinQueues;
    let next = 0;
    const worker = async () => {
      while (next < due.length && !atOnce()) await due[next++].datasync();
    };
    await Promise.all(Array.from({ length: Math.min(SYNC_PARALLEL, due.length) }, worker));
    if (next < due.length) await this.#syncAtOnce(due.slice(next));
    await this.files.syncDir(this.dir);
    return durableBelow;
  }

  /** A stop is under way: syncs of many queues (one running too) take one FsSync. */
  hurry(): void {
    this.#closing = true;
  }

  /** Writes the queues' units, then one filesystem sync makes them durable. */
  async #syncAtOnce(queues: ConsumeQueue[]): Promise<void> {
    for (let i = 0; i < queues.length; i++) {
      if (i > 0 && i % WRITES_PER_TURN === 0) await new Promise((r) => setImmediate(r));
      await queues[i].datasync(true); // writes only: nothing to wait for
    }
    this.fsSyncs++;
    await this.#fsSync!.sync();
  }

  /** Removes a topic's queues and files (topic deletion). */
  destroyTopic(topic: string): void {
    const byId = this.#queues.get(topic);
    if (!byId) return;
    for (const cq of byId.values()) cq.destroy();
    this.#queues.delete(topic);
    this.files.removeTree(joinPath(this.dir, topic));
  }

  close(): void {
    for (const cq of this.all()) cq.close();
    this.#queues.clear();
    this.#fsSync?.close();
    this.#fsSync = undefined;
  }

  #make(topic: string, queueId: number): ConsumeQueue {
    let byId = this.#queues.get(topic);
    if (!byId) {
      byId = new Map();
      this.#queues.set(topic, byId);
    }
    const cq = new ConsumeQueue(this.files, this.dir, topic, queueId, this.unitsPerFile);
    byId.set(queueId, cq);
    return cq;
  }
}
