// Helpers for replication tests and the benchmark: stores in temp folders on the real disk,
// fast timings, a frame-aware TCP proxy that can hold or alter frames in flight, and checks
// that two replicas hold the same CommitLog bytes, ConsumeQueues and epoch entries.
// Not used by production code.
import assert from "node:assert/strict";
import * as net from "node:net";
import { NodeFilePort } from "../../../storage/node_fs_port.ts";
import { type FilePort, joinPath, readFully } from "../../../storage/file_port.ts";
import { MessageStore, type PutResult } from "../../../storage/message_store.ts";
import type { StoreConfig } from "../../../storage/config.ts";
import {
  seededRandom,
  smallStoreConfig,
  storeCore,
  testMessage,
} from "../../../storage/testing.ts";
import { EPOCH_FILE_NAME, EpochFile } from "../../../storage/ha/epoch_file.ts";
import { encodeFrame, type Frame, FrameDecoder } from "../../../runtime/ha/frames.ts";
import type { ReplicationConfig } from "../../../runtime/ha/replication_config.ts";

export const nowMs = () => performance.now();

/** Timings short enough for tests; limits as in production. */
export const FAST: Partial<ReplicationConfig> = {
  haSendHeartbeatInterval: 100,
  haHousekeepingInterval: 3000,
  haConnectTimeoutMs: 2000,
  haReconnectDelayMsMin: 20,
  haReconnectDelayMsMax: 200,
};

export interface TestNode {
  dir: string;
  store: MessageStore;
  epochs: EpochFile;
}

/** 64 KiB segments, small queue and index files: everything rolls in a test. */
export function nodeConfig(dir: string, patch: Partial<StoreConfig> = {}): StoreConfig {
  return smallStoreConfig(dir, {
    mappedFileSizeCommitLog: 64 * 1024,
    mappedFileSizeConsumeQueueUnits: 1000,
    maxHashSlotNum: 1024,
    maxIndexNum: 8192,
    ...patch,
  });
}

/** Opens (recovers) the store in `dir` and its epoch file, clipped to the recovered log. */
export async function openNode(
  dir: string,
  patch: Partial<StoreConfig> = {},
  files: FilePort = new NodeFilePort(),
): Promise<TestNode> {
  files.mkdirp(dir);
  const store = new MessageStore({
    files,
    config: nodeConfig(dir, patch),
    nowMs: () => Date.now(),
  });
  await store.open();
  const epochs = EpochFile.open(files, joinPath(dir, EPOCH_FILE_NAME));
  await epochs.clipTo(store.maxPhysicalOffset);
  return { dir, store, epochs };
}

/** Random puts over three topics and four queues; every `bigEvery`th body is 40 KiB (more
 * than one transfer batch). Resolves with every put's result, in put order. */
export async function produce(
  store: MessageStore,
  count: number,
  seed: number,
  options: { bigEvery?: number; keyPrefix?: string } = {},
): Promise<PutResult[]> {
  const random = seededRandom(seed);
  const out: Promise<PutResult>[] = [];
  for (let i = 0; i < count; i++) {
    const big = options.bigEvery !== undefined && i % options.bigEvery === options.bigEvery - 1;
    const size = big ? 40 * 1024 : Math.floor(random() * 2000);
    const body = new Uint8Array(size).map(() => Math.floor(random() * 256));
    const topic = ["Orders", "Events", "%RETRY%g1"][Math.floor(random() * 3)];
    out.push(store.putMessage(
      testMessage(topic, Math.floor(random() * 4), body, {
        TAGS: random() < 0.5 ? "a" : "b",
        KEYS: `${options.keyPrefix ?? "k"}${seed}-${i}`,
      }),
    ));
    if (random() < 0.2) await out.at(-1);
  }
  return Promise.all(out);
}

/** Polls `condition` every 5 ms until it holds, or fails after `timeoutMs`. */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Every ConsumeQueue's bounds and units, in queue order. */
export function queueContents(store: MessageStore) {
  return [...storeCore(store).consumeQueues.all()].map((cq) => {
    const units = [];
    for (let at = cq.minOffset; at < cq.maxOffset;) {
      const part = cq.range(at, cq.maxOffset - at); // one queue file at most
      units.push(...part);
      at += part.length;
    }
    return { queue: `${cq.topic}:${cq.queueId}`, min: cq.minOffset, max: cq.maxOffset, units };
  }).sort((a, b) => a.queue < b.queue ? -1 : 1);
}

/** Segment files of a store's CommitLog, read from its files: name -> bytes. */
export function segmentFiles(store: MessageStore): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const { files, commitLog } = storeCore(store);
  for (const name of files.list(commitLog.dir)) {
    const file = files.open(joinPath(commitLog.dir, name));
    try {
      out.set(name, readFully(file, 0, file.size()));
    } finally {
      file.close();
    }
  }
  return out;
}

/** The slave holds the master's CommitLog byte for byte, the same queues and epochs. */
export function assertSameReplica(master: TestNode, slave: TestNode) {
  assert.equal(slave.store.maxPhysicalOffset, master.store.maxPhysicalOffset);
  const want = segmentFiles(master.store), got = segmentFiles(slave.store);
  assert.deepEqual([...got.keys()], [...want.keys()], "segment names");
  for (const [name, bytes] of want) {
    assert.ok(Buffer.compare(got.get(name)!, bytes) === 0, `segment ${name} differs`);
  }
  const queues = queueContents(master.store);
  assert.ok(queues.length > 0);
  assert.deepEqual(queueContents(slave.store), queues);
  assert.deepEqual(slave.epochs.entries, master.epochs.entries);
}

export async function closeNode(node: TestNode) {
  await node.store.close();
}

export async function withTempDirs<T>(n: number, f: (dirs: string[]) => Promise<T>): Promise<T> {
  const dirs: string[] = [];
  for (let i = 0; i < n; i++) dirs.push(await Deno.makeTempDir({ prefix: "edgemq-ha-" }));
  try {
    return await f(dirs);
  } finally {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true });
  }
}

/**
 * A TCP proxy between slaves and a master that decodes frames both ways, so a test can hold
 * them (pause) or change those going to the slave (toSlave) before passing them on.
 */
export class FrameProxy {
  paused = false;
  toSlave: (frame: Frame) => Frame = (f) => f;
  /** Changes the bytes of an encoded frame going to the slave (damage in flight). */
  toSlaveBytes: (bytes: Uint8Array, frame: Frame) => Uint8Array = (b) => b;
  #server: net.Server;
  #sockets = new Set<net.Socket>();
  #held: [net.Socket, Uint8Array][] = [];
  port = 0;

  private constructor(private readonly target: { host: string; port: number }) {
    this.#server = net.createServer((slave) => this.#connect(slave));
  }

  static async start(target: { host: string; port: number }): Promise<FrameProxy> {
    const proxy = new FrameProxy(target);
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", () => resolve()));
    proxy.port = (proxy.#server.address() as net.AddressInfo).port;
    return proxy;
  }

  resume() {
    this.paused = false;
    const held = this.#held;
    this.#held = [];
    for (const [socket, bytes] of held) if (!socket.destroyed) socket.write(bytes);
  }

  /** Cuts every connection (both sides see it closed). */
  async cut() {
    const closed = [...this.#sockets].map((s) => new Promise((r) => s.once("close", r)));
    for (const s of this.#sockets) s.destroy();
    await Promise.all(closed);
  }

  async close() {
    await this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #connect(slave: net.Socket) {
    const master = net.connect(this.target);
    for (const s of [slave, master]) {
      this.#sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        this.#sockets.delete(s);
        slave.destroy();
        master.destroy();
      });
    }
    this.#pipe(slave, master, (f) => encodeFrame(f));
    this.#pipe(master, slave, (f) => {
      const changed = this.toSlave(f);
      return this.toSlaveBytes(encodeFrame(changed), changed);
    });
  }

  #pipe(from: net.Socket, to: net.Socket, encode: (f: Frame) => Uint8Array) {
    const decoder = new FrameDecoder();
    from.on("data", (chunk: Uint8Array) => {
      for (const frame of decoder.push(chunk)) {
        const bytes = encode(frame);
        if (this.paused) this.#held.push([to, bytes]);
        else to.write(bytes);
      }
    });
  }
}
