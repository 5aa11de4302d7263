// Consumer offsets: RocketMQ's ConsumerOffsetManager over the consumer_offset table. A
// stored offset is the next queue offset the group will consume (reference/rocketmq.md §7).
//
// Commits happen on every pull and every UPDATE_CONSUMER_OFFSET, so they go to memory only;
// persist() writes what changed since the last persist in one transaction, every
// flushConsumerOffsetInterval (5 s) and at shutdown, as RocketMQ writes consumerOffset.json.
// A crash loses at most one interval of commits: consumers then re-read those messages,
// which at-least-once delivery allows.

import { inArray, type SQL, sql } from "drizzle-orm";
import { clearTimeout, setTimeout } from "node:timers";
import { assert } from "../errors.ts";
import { assertName, checkInteger, type IntegerRange, QUEUE_NUMS_MAX } from "./metadata_store.ts";
import { consumerOffset, type MetadataDb } from "./schema.ts";

/** ms between background persists (flushConsumerOffsetInterval). */
export const FLUSH_CONSUMER_OFFSET_INTERVAL_MS = 5000;

/** Rows per multi-row upsert: 5 parameters a row keeps a statement at 500 parameters,
 * under SQLite's oldest default limit of 999 (SQLITE_MAX_VARIABLE_NUMBER). */
const OFFSET_ROWS_PER_STATEMENT = 100;

/** Names per DELETE ... IN (...), for the same limit. */
const NAMES_PER_STATEMENT = 500;

const QUEUE_ID_RANGE: IntegerRange = { min: 0, max: QUEUE_NUMS_MAX - 1, code: "QUEUE_ID_ILLEGAL" };
const OFFSET_RANGE: IntegerRange = { min: 0, max: Number.MAX_SAFE_INTEGER, code: "OFFSET_ILLEGAL" };

interface OffsetEntry {
  readonly groupName: string;
  readonly topicName: string;
  readonly queueId: number;
  offset: number;
  updatedAtMs: number;
}

export interface ConsumerOffsetStoreOptions {
  /** Wall-clock ms, stored beside each offset as the time of its last commit. */
  nowMs: () => number;
}

export interface ConsumerOffsetStoreStartOptions {
  intervalMs?: number;
  /** Called with a failed background persist; its offsets stay dirty and the next persist
   * retries them. Without it the rejection is left unhandled, which stops the process. */
  onPersistError?: (error: unknown) => void;
}

export class ConsumerOffsetStore {
  readonly #db: MetadataDb;
  readonly #nowMs: () => number;
  /** group -> topic -> queueId -> entry. */
  readonly #groups = new Map<string, Map<string, Map<number, OffsetEntry>>>();
  /** Entries committed since the last persist took its snapshot. */
  #dirty = new Set<OffsetEntry>();
  /** Groups and topics removed since then; their rows go before the dirty ones are written,
   * as any entry still in memory was committed after its removal. */
  #removedGroups = new Set<string>();
  #removedTopics = new Set<string>();
  /** Persists run one after another, so an older snapshot never lands after a newer one. */
  #persistTail: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Identifies the current start(); a tick of an earlier one does not re-arm. */
  #run: object | undefined;

  private constructor(db: MetadataDb, nowMs: () => number) {
    this.#db = db;
    this.#nowMs = nowMs;
  }

  /** Loads every stored offset into memory. */
  static async open(
    db: MetadataDb,
    options: ConsumerOffsetStoreOptions,
  ): Promise<ConsumerOffsetStore> {
    const store = new ConsumerOffsetStore(db, options.nowMs);
    const rows = await db.select().from(consumerOffset);
    for (const row of rows) store.#put({ ...row });
    return store;
  }

  /** Sets the group's next offset for the queue, in memory. Going back is allowed: a reset
   * does it. */
  commit(groupName: string, topicName: string, queueId: number, offset: number): void {
    assertName(groupName);
    assertName(topicName);
    const what = `offset of group ${groupName} on topic ${topicName}`;
    checkInteger(queueId, QUEUE_ID_RANGE, what, "queueId");
    checkInteger(offset, OFFSET_RANGE, what, "offset");
    const updatedAtMs = this.#nowMs();
    const entry = this.#groups.get(groupName)?.get(topicName)?.get(queueId);
    if (entry === undefined) {
      this.#dirty.add(this.#put({ groupName, topicName, queueId, offset, updatedAtMs }));
    } else {
      entry.offset = offset;
      entry.updatedAtMs = updatedAtMs;
      this.#dirty.add(entry);
    }
  }

  /** The next offset to consume, or undefined if the group never committed one. */
  query(groupName: string, topicName: string, queueId: number): number | undefined {
    return this.#groups.get(groupName)?.get(topicName)?.get(queueId)?.offset;
  }

  /** queueId -> next offset, for every queue of the topic the group committed. */
  queryAll(groupName: string, topicName: string): Map<number, number> {
    const queues = this.#groups.get(groupName)?.get(topicName);
    const offsets = new Map<number, number>();
    for (const [queueId, entry] of queues ?? []) offsets.set(queueId, entry.offset);
    return offsets;
  }

  /** Forgets every offset of the group; the next persist deletes its rows. */
  removeGroup(groupName: string): void {
    for (const queues of this.#groups.get(groupName)?.values() ?? []) this.#forget(queues);
    this.#groups.delete(groupName);
    this.#removedGroups.add(groupName);
  }

  /** Forgets every group's offsets on the topic; the next persist deletes their rows. */
  removeTopic(topicName: string): void {
    for (const [groupName, topics] of this.#groups) {
      const queues = topics.get(topicName);
      if (queues === undefined) continue;
      this.#forget(queues);
      topics.delete(topicName);
      if (topics.size === 0) this.#groups.delete(groupName);
    }
    this.#removedTopics.add(topicName);
  }

  /** Writes the changes since the last persist in one transaction. On failure they stay
   * pending for the next persist. */
  persist(): Promise<void> {
    const done = this.#persistTail.then(() => this.#persistPending());
    this.#persistTail = done.catch(() => {});
    return done;
  }

  /** Persists every intervalMs (default 5000) until stop(). The timer is unref'd: it does
   * not keep the process alive. */
  start(options: ConsumerOffsetStoreStartOptions = {}): void {
    const { intervalMs = FLUSH_CONSUMER_OFFSET_INTERVAL_MS, onPersistError } = options;
    assert(this.#run === undefined, "offset store is not started twice");
    assert(Number.isInteger(intervalMs) && intervalMs > 0, "persist interval is positive ms");
    const run = {};
    this.#run = run;
    const arm = () => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.persist()
          .catch((error) => {
            if (onPersistError === undefined) throw error;
            onPersistError(error);
          })
          .finally(() => {
            if (this.#run === run) arm();
          });
      }, intervalMs);
      this.#timer.unref();
    };
    arm();
  }

  /** Stops the timer and persists a final time; waits for a persist in flight. */
  async stop(): Promise<void> {
    this.#run = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.persist();
  }

  #put(entry: OffsetEntry): OffsetEntry {
    let topics = this.#groups.get(entry.groupName);
    if (topics === undefined) this.#groups.set(entry.groupName, topics = new Map());
    let queues = topics.get(entry.topicName);
    if (queues === undefined) topics.set(entry.topicName, queues = new Map());
    assert(!queues.has(entry.queueId), "an offset entry is put once");
    queues.set(entry.queueId, entry);
    return entry;
  }

  #forget(queues: Map<number, OffsetEntry>): void {
    for (const entry of queues.values()) this.#dirty.delete(entry);
  }

  async #persistPending(): Promise<void> {
    const dirty = this.#dirty;
    const removedGroups = this.#removedGroups;
    const removedTopics = this.#removedTopics;
    if (dirty.size === 0 && removedGroups.size === 0 && removedTopics.size === 0) return;
    this.#dirty = new Set();
    this.#removedGroups = new Set();
    this.#removedTopics = new Set();
    // Copy the values now: commits during the await mutate the entries.
    const rows = [...dirty].map((entry) => ({ ...entry }));
    const statements = [
      ...chunks([...removedGroups], NAMES_PER_STATEMENT).map((names) =>
        this.#db.delete(consumerOffset).where(inArray(consumerOffset.groupName, names))
      ),
      ...chunks([...removedTopics], NAMES_PER_STATEMENT).map((names) =>
        this.#db.delete(consumerOffset).where(inArray(consumerOffset.topicName, names))
      ),
      ...chunks(rows, OFFSET_ROWS_PER_STATEMENT).map((chunk) =>
        this.#db.insert(consumerOffset).values(chunk).onConflictDoUpdate({
          target: [consumerOffset.groupName, consumerOffset.topicName, consumerOffset.queueId],
          set: { offset: excluded("queue_offset"), updatedAtMs: excluded("updated_at_ms") },
        })
      ),
    ];
    assert(statements.length > 0, "a persist with pending changes writes something");
    try {
      await this.#db.batch(statements as [typeof statements[0], ...typeof statements]);
    } catch (error) {
      this.#restore(dirty, removedGroups, removedTopics);
      throw error;
    }
  }

  /** Puts a failed persist's changes back. An entry removed meanwhile stays out: its
   * removal is pending too. */
  #restore(dirty: Set<OffsetEntry>, groups: Set<string>, topics: Set<string>): void {
    for (const group of groups) this.#removedGroups.add(group);
    for (const topic of topics) this.#removedTopics.add(topic);
    for (const entry of dirty) {
      const current = this.#groups.get(entry.groupName)?.get(entry.topicName)?.get(entry.queueId);
      if (current === entry) this.#dirty.add(entry);
    }
  }
}

function excluded(column: string): SQL {
  return sql.raw(`excluded."${column}"`);
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let start = 0; start < items.length; start += size) {
    result.push(items.slice(start, start + size));
  }
  return result;
}
