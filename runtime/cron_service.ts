// Cron schedules: publish a stored message to a topic on a cron expression in a time zone.
// Expressions are parsed and stepped by croner (5 or 6 fields, seconds optional); across
// DST changes croner 11 fires a wall-clock time that does not exist (spring forward) once,
// at the first instant after the gap, and a time that exists twice (fall back) at both
// instants. Schedules live in the metadata database; each published tick is recorded
// there (lastTickMs). Ticks missed while the broker was down are a per-schedule setting:
//   "skip"       (default) resume with the next tick after now;
//   "fire_once"  publish once for all missed ticks, then resume.
// A crash between publishing a tick and recording it publishes it again on restart with
// "fire_once" (at-least-once); each tick carries the Idempotency-Key cron:{id}:{tickMs}.
import type { CronScheduleExport } from "./protocol/cluster_types.ts";
import { Cron } from "croner";
import type { MetadataDb } from "../storage/metadata/schema.ts";
import { CronScheduleRepo, type CronScheduleRow } from "../storage/metadata/cron_schedule_repo.ts";
import { BrokerError } from "./protocol/errors.ts";
import type {
  CronScheduleInput,
  CronScheduleView,
  ProduceMessage,
  ProduceResult,
} from "./protocol/types.ts";
import type { Logger } from "./log.ts";
import { fromBase64, toBase64 } from "./wire.ts";

/** Longest single sleep; the loop re-plans after it (clock changes, new schedules). */
const SLEEP_MS_MAX = 60_000;

export interface StoredMessage {
  body: string; // base64
  tag?: string;
  keys?: string[];
  properties?: Record<string, string>;
  contentType?: string;
}

type Row = CronScheduleRow;

/** The first tick strictly after `afterMs`, or undefined if the expression never fires again. */
export function nextTickMs(cron: string, timeZone: string, afterMs: number): number | undefined {
  const job = new Cron(cron, { timezone: timeZone, paused: true });
  return job.nextRun(new Date(afterMs))?.getTime();
}

export function checkCron(cron: string, timeZone: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone }).format(0);
  } catch {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot use time zone ${JSON.stringify(timeZone)}: use an IANA name such as Europe/Berlin`,
    );
  }
  try {
    new Cron(cron, { timezone: timeZone, paused: true });
  } catch (err) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot parse cron expression ${JSON.stringify(cron)}: ${(err as Error).message}`,
    );
  }
}

export class CronService {
  #rows = new Map<string, Row>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #firing: Promise<void> = Promise.resolve();
  readonly #repo: CronScheduleRepo;

  constructor(
    private readonly options: {
      db: MetadataDb;
      produce: (topic: string, message: ProduceMessage) => Promise<ProduceResult>;
      nowMs: () => number;
      log: Logger;
      schedulesMax: number;
      newId: () => string;
    },
  ) {
    this.#repo = new CronScheduleRepo(options.db);
  }

  async start(): Promise<void> {
    for (const row of await this.#repo.all()) {
      this.#rows.set(row.scheduleId, row);
    }
    const now = this.options.nowMs();
    for (const row of this.#rows.values()) {
      if (row.paused) continue;
      const next = nextTickMs(row.cron, row.timeZone, row.lastTickMs ?? row.createdAtMs);
      if (next === undefined || next > now) continue;
      if (row.missedTicks === "fire_once") await this.#publish(row, next);
      await this.#record(row, now);
    }
    this.#plan();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#firing;
  }

  create(input: CronScheduleInput): Promise<CronScheduleView> {
    const now = this.options.nowMs();
    return this.#insert(input, { id: this.options.newId(), createdAtMs: now, lastTickMs: null });
  }

  /** The schedule whole (docs/cluster.md: a drain moves it to another group). */
  export(id: string): CronScheduleExport {
    const row = this.#find(id);
    const m = JSON.parse(row.messageJson) as StoredMessage;
    return {
      id: row.scheduleId,
      topic: row.topicName,
      cron: row.cron,
      timeZone: row.timeZone,
      missedTicks: row.missedTicks,
      paused: row.paused,
      message: { ...m, body: fromBase64(m.body) },
      createdAt: row.createdAtMs,
      lastTickAt: row.lastTickMs,
    };
  }

  /** Creates `s` with its own id, creation time and last tick; the same schedule already
   * here (id, topic, cron) is answered as it is. */
  import(s: CronScheduleExport): Promise<CronScheduleView> {
    const here = this.#rows.get(s.id);
    if (here !== undefined) {
      if (here.topicName === s.topic && here.cron === s.cron) {
        return Promise.resolve(this.#view(here));
      }
      throw new BrokerError(
        "SCHEDULE_EXISTS",
        `Cannot import schedule ${s.id}: another has its id`,
      );
    }
    return this.#insert(s, { id: s.id, createdAtMs: s.createdAt, lastTickMs: s.lastTickAt });
  }

  async #insert(
    input: CronScheduleInput,
    at: { id: string; createdAtMs: number; lastTickMs: number | null },
  ): Promise<CronScheduleView> {
    checkCron(input.cron, input.timeZone ?? "UTC");
    if (this.#rows.size >= this.options.schedulesMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot create more than ${this.options.schedulesMax} schedules (cronSchedulesMax)`,
      );
    }
    const now = this.options.nowMs();
    const m = input.message;
    const stored: StoredMessage = {
      body: toBase64(m.body),
      tag: m.tag,
      keys: m.keys,
      properties: m.properties,
      contentType: m.contentType,
    };
    const row: Row = {
      scheduleId: at.id,
      topicName: input.topic,
      cron: input.cron,
      timeZone: input.timeZone ?? "UTC",
      messageJson: JSON.stringify(stored),
      paused: input.paused ?? false,
      missedTicks: input.missedTicks ?? "skip",
      lastTickMs: at.lastTickMs,
      createdAtMs: at.createdAtMs,
      updatedAtMs: now,
    };
    await this.#repo.insert(row);
    this.#rows.set(row.scheduleId, row);
    this.#plan();
    return this.#view(row);
  }

  list(): CronScheduleView[] {
    return [...this.#rows.values()].sort((a, b) => a.createdAtMs - b.createdAtMs).map((r) =>
      this.#view(r)
    );
  }

  get(id: string): CronScheduleView {
    return this.#view(this.#find(id));
  }

  async setPaused(id: string, paused: boolean): Promise<CronScheduleView> {
    const row = this.#find(id);
    const now = this.options.nowMs();
    // Resuming never fires the ticks that fell while paused.
    const next: Row = {
      ...row,
      paused,
      updatedAtMs: now,
      lastTickMs: paused ? row.lastTickMs : Math.max(row.lastTickMs ?? 0, now),
    };
    await this.#repo.setPaused(id, { paused, updatedAtMs: now, lastTickMs: next.lastTickMs });
    this.#rows.set(id, next);
    this.#plan();
    return this.#view(next);
  }

  async delete(id: string): Promise<void> {
    this.#find(id);
    await this.#repo.delete(id);
    this.#rows.delete(id);
    this.#plan();
  }

  /** A schedule's stored message (body in base64) and when it was made. */
  message(id: string): { message: StoredMessage; createdAtMs: number } {
    const row = this.#find(id);
    return { message: JSON.parse(row.messageJson) as StoredMessage, createdAtMs: row.createdAtMs };
  }

  #find(id: string): Row {
    const row = this.#rows.get(id);
    if (!row) throw new BrokerError("SCHEDULE_NOT_FOUND", `No schedule ${id}`);
    return row;
  }

  #view(row: Row): CronScheduleView {
    const after = Math.max(row.lastTickMs ?? row.createdAtMs, this.options.nowMs());
    return {
      id: row.scheduleId,
      topic: row.topicName,
      cron: row.cron,
      timeZone: row.timeZone,
      paused: row.paused,
      missedTicks: row.missedTicks,
      lastTickAt: row.lastTickMs,
      nextTickAt: row.paused ? null : nextTickMs(row.cron, row.timeZone, after) ?? null,
    };
  }

  /** One timer for the earliest due tick of all active schedules. */
  #plan() {
    clearTimeout(this.#timer);
    if (this.#stopped) return;
    const now = this.options.nowMs();
    let earliest = Infinity;
    for (const row of this.#rows.values()) {
      if (row.paused) continue;
      const next = nextTickMs(row.cron, row.timeZone, row.lastTickMs ?? row.createdAtMs);
      if (next !== undefined) earliest = Math.min(earliest, next);
    }
    if (earliest === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#firing = this.#fireDue().catch((err) =>
        this.options.log("error", "cron tick failed", { err: String(err) })
      ).finally(() => this.#plan());
    }, Math.min(SLEEP_MS_MAX, Math.max(0, earliest - now)));
  }

  async #fireDue() {
    const now = this.options.nowMs();
    for (const row of [...this.#rows.values()]) {
      if (row.paused || this.#stopped) continue;
      const tick = nextTickMs(row.cron, row.timeZone, row.lastTickMs ?? row.createdAtMs);
      if (tick === undefined || tick > now) continue;
      await this.#publish(row, tick);
      await this.#record(row, tick);
    }
  }

  async #publish(row: Row, tickMs: number) {
    const m = JSON.parse(row.messageJson) as StoredMessage;
    try {
      await this.options.produce(row.topicName, {
        body: fromBase64(m.body),
        tag: m.tag,
        keys: m.keys,
        properties: { ...m.properties, cronSchedule: row.scheduleId, cronTick: String(tickMs) },
        contentType: m.contentType,
        idempotencyKey: `cron:${row.scheduleId}:${tickMs}`,
      });
    } catch (err) {
      this.options.log("warn", "cron schedule could not publish; the tick is skipped", {
        id: row.scheduleId,
        tickMs,
        err: String(err),
      });
    }
  }

  async #record(row: Row, tickMs: number) {
    const current = this.#rows.get(row.scheduleId);
    if (!current) return;
    await this.#repo.setLastTick(row.scheduleId, tickMs);
    this.#rows.set(row.scheduleId, { ...current, lastTickMs: tickMs });
  }
}
