// Delay levels (RocketMQ's ScheduleMessageService, reference/rocketmq.md §8). A message
// with DELAY=N is stored in SCHEDULE_TOPIC_XXXX queue N-1 with its real topic and queue in
// REAL_TOPIC / REAL_QID; its ConsumeQueue tagsCode is its delivery time. Each level is a
// FIFO with one delay, so the head is always the next due: one timer per level, set to the
// head's delivery time, re-puts due messages to their real queue and advances the level's
// offset. Offsets are persisted to `delayOffset.json` every flushDelayOffsetInterval and
// at shutdown; a crash between a re-put and the next persist re-delivers (at-least-once,
// with the same UNIQ_KEY, so consumers can tell).
import {
  PROPERTY_DELAY,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_REAL_TOPIC,
  PROPERTY_TIMER_DELAY_MS,
  PROPERTY_TIMER_DELAY_SEC,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_TIMER_OUT_MS,
  PROPERTY_TIMER_ROLL_TIMES,
  SCHEDULE_TOPIC,
} from "../storage/message/message_const.ts";
import type { MessageStore } from "../storage/message_store.ts";
import type { MessageRecord } from "../storage/message/record.ts";
import { type FilePort, readWholeFile, writeFileAtomic } from "../storage/file_port.ts";
import type { Logger } from "./log.ts";

/** Properties that only mean something while a message waits. */
const WAITING_PROPERTIES = [
  PROPERTY_DELAY,
  PROPERTY_REAL_TOPIC,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_TIMER_DELAY_SEC,
  PROPERTY_TIMER_DELAY_MS,
  PROPERTY_TIMER_OUT_MS,
  PROPERTY_TIMER_ROLL_TIMES,
];
/** Longest single sleep of a level's timer; it re-checks after (clock changes, safety). */
const SLEEP_MS_MAX = 60_000;
/** Re-puts per level per turn, so one level cannot hold the event loop. */
const BATCH_MAX = 256;

function isRetryOrDlq(topic: string): boolean {
  return topic.startsWith("%RETRY%") || topic.startsWith("%DLQ%");
}

/** The message a waiting record becomes when due: its real topic and queue, same id and body. */
export function restoreRealMessage(
  record: MessageRecord,
  storeHost: { ip: Uint8Array; port: number },
  dueMs?: number,
) {
  const properties = new Map(record.properties);
  const topic = properties.get(PROPERTY_REAL_TOPIC)!;
  const queueId = Number(properties.get(PROPERTY_REAL_QUEUE_ID));
  for (const p of WAITING_PROPERTIES) properties.delete(p);
  // The time it was due stays on the delivered message as TIMER_DELIVER_MS (RocketMQ's
  // timer store keeps it; its proxy turns it into gRPC's delivery_timestamp and DELAY type).
  // A consumer's retry (%RETRY% through a delay level) is not a delayed message: none.
  if (dueMs !== undefined && !isRetryOrDlq(topic)) {
    properties.set(PROPERTY_TIMER_DELIVER_MS, String(dueMs));
  }
  return {
    topic,
    queueId,
    body: record.body,
    flag: record.flag,
    properties,
    bornTimestamp: record.bornTimestamp,
    bornHost: record.bornHost,
    storeHost,
    reconsumeTimes: record.reconsumeTimes,
  };
}

export class ScheduleService {
  #offsets: number[];
  #timers: (ReturnType<typeof setTimeout> | undefined)[];
  #running: boolean[];
  /** Each level's latest delivery pass, so stop() persists only after its re-puts settle. */
  #passes: Promise<void>[];
  #persistTimer: ReturnType<typeof setInterval> | undefined;
  #stopped = false;
  readonly #path: string;
  /** Delivery lateness samples (ms), for stats; bounded ring. */
  readonly lateness: number[] = [];

  constructor(
    private readonly store: MessageStore,
    private readonly options: {
      /** Where delayOffset.json is kept. */
      files: FilePort;
      dataDir: string;
      nowMs: () => number;
      log: Logger;
      storeHost: { ip: Uint8Array; port: number };
      flushDelayOffsetIntervalMs: number;
    },
  ) {
    const levels = store.delayLevelsMs.length;
    this.#offsets = new Array(levels).fill(0);
    this.#timers = new Array(levels).fill(undefined);
    this.#running = new Array(levels).fill(false);
    this.#passes = new Array(levels).fill(Promise.resolve());
    this.#path = `${options.dataDir}/delayOffset.json`;
  }

  get levels(): number {
    return this.#offsets.length;
  }

  /** Messages waiting in each level (max offset - delivered offset). */
  pending(): number[] {
    return this.#offsets.map((o, i) =>
      Math.max(0, this.store.getMaxOffsetInQueue(SCHEDULE_TOPIC, i) - o)
    );
  }

  start(): void {
    const bytes = readWholeFile(this.options.files, this.#path);
    if (bytes) {
      const saved = JSON.parse(new TextDecoder().decode(bytes)) as {
        offsetTable: Record<string, number>;
      };
      for (const [level, offset] of Object.entries(saved.offsetTable)) {
        const i = Number(level) - 1;
        if (i >= 0 && i < this.#offsets.length) this.#offsets[i] = offset;
      }
    }
    for (let i = 0; i < this.#offsets.length; i++) this.#wake(i);
    this.#persistTimer = setInterval(
      () =>
        void this.persist().catch((err) =>
          this.options.log("error", "persisting delay offsets failed", { err: String(err) })
        ),
      this.options.flushDelayOffsetIntervalMs,
    );
  }

  /** Dispatch's arrival notice for SCHEDULE_TOPIC_XXXX queue `queueId`. */
  arriving(queueId: number): void {
    if (
      queueId < this.#offsets.length && this.#timers[queueId] === undefined &&
      !this.#running[queueId]
    ) this.#wake(queueId);
  }

  /** delayOffset.json, RocketMQ's shape: {"offsetTable": {level: nextCqOffset}}. */
  async persist(): Promise<void> {
    const offsetTable: Record<string, number> = {};
    this.#offsets.forEach((o, i) => offsetTable[String(i + 1)] = o);
    await writeFileAtomic(
      this.options.files,
      this.#path,
      new TextEncoder().encode(JSON.stringify({ offsetTable })),
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#persistTimer);
    for (const t of this.#timers) clearTimeout(t);
    await Promise.all(this.#passes);
    await this.persist();
  }

  #wake(level: number) {
    clearTimeout(this.#timers[level]);
    this.#timers[level] = undefined;
    if (!this.#stopped) this.#passes[level] = this.#deliverDue(level);
  }

  async #deliverDue(level: number) {
    this.#running[level] = true;
    try {
      for (;;) {
        const max = this.store.getMaxOffsetInQueue(SCHEDULE_TOPIC, level);
        const min = this.store.getMinOffsetInQueue(SCHEDULE_TOPIC, level);
        if (this.#offsets[level] < min) this.#offsets[level] = min;
        if (this.#offsets[level] >= max) return; // idle until the next arrival
        const units = this.store.queueUnits(
          SCHEDULE_TOPIC,
          level,
          this.#offsets[level],
          BATCH_MAX,
        );
        const now = this.options.nowMs();
        const puts: Promise<unknown>[] = [];
        const putOffsets: number[] = [];
        let reached = this.#offsets[level];
        let next: number | undefined;
        for (const unit of units) {
          // deliverTs is the tagsCode; one beyond now + the level's delay means the clock
          // went back: deliver now rather than wait for it (as RocketMQ does).
          const deliverTs = Math.min(unit.tagsCode, now + this.store.delayLevelsMs[level]);
          if (deliverTs > now) {
            next = deliverTs;
            break;
          }
          const record = this.store.lookMessageByOffset(unit.commitLogOffset);
          if (record && record.properties.has(PROPERTY_REAL_TOPIC)) {
            puts.push(
              this.store.putMessage(
                restoreRealMessage(record, this.options.storeHost, unit.tagsCode),
              ),
            );
            putOffsets.push(unit.queueOffset);
            this.#sample(now - unit.tagsCode);
          }
          reached = unit.queueOffset + 1;
        }
        // The level's offset moves only past stored re-puts: persist() may run while they
        // are in flight, and a refused one must be tried again, not skipped. From the first
        // refused one on, all are re-put (the later ones may come twice: at-least-once).
        const settled = await Promise.allSettled(puts);
        const refused = settled.findIndex((s) => s.status === "rejected");
        if (refused >= 0) {
          this.#offsets[level] = putOffsets[refused];
          throw (settled[refused] as PromiseRejectedResult).reason;
        }
        this.#offsets[level] = reached;
        if (this.#stopped) return;
        if (next !== undefined) {
          this.#timers[level] = setTimeout(
            () => this.#wake(level),
            Math.min(SLEEP_MS_MAX, next - now),
          );
          return;
        }
      }
    } catch (err) {
      // A refused put (store not writable): retry in 100 ms, as RocketMQ does.
      this.options.log("warn", "delay level delivery failed; retrying", {
        level: level + 1,
        err: String(err),
      });
      if (!this.#stopped) this.#timers[level] = setTimeout(() => this.#wake(level), 100);
    } finally {
      this.#running[level] = false;
    }
  }

  #sample(lateMs: number) {
    if (this.lateness.length >= 10_000) this.lateness.shift();
    this.lateness.push(Math.max(0, lateMs));
  }
}
