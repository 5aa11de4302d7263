// Scheduled messages a producer owns (cancel, reschedule: the timer wheel) and cron
// schedules (CronService), behind the core's argument checks.
import type { CronScheduleExport } from "../protocol/cluster_types.ts";
import { BrokerError } from "../protocol/errors.ts";
import { checkReadableTopic } from "../protocol/names.ts";
import type {
  CronScheduleInput,
  CronScheduleView,
  ProduceMessage,
  ScheduledOutcome,
  TopicConfig,
} from "../protocol/types.ts";
import { MESSAGE_ID_PATTERN } from "../message_id.ts";
import { checkCron, type CronService } from "../cron_service.ts";
import type { TimerService } from "../timer_service.ts";
import { fromStoreError } from "../wire.ts";

export interface SchedulingDeps {
  timers: TimerService;
  cron: CronService;
  /** The producer's check that a topic takes writes now (cron publishes to it). */
  writableTopic: (name: string) => TopicConfig | Promise<TopicConfig>;
  /** The producer's produce rules, applied to a schedule's message at creation. */
  checkMessage: (message: ProduceMessage) => void;
  timerHorizonMs: number;
  nowMs: () => number;
}

export class Scheduling {
  constructor(private readonly d: SchedulingDeps) {}

  /** Cancels a message scheduled with Mq-Delay-Ms / Mq-Deliver-At before it is delivered. */
  async cancelScheduled(topic: string, messageId: string): Promise<ScheduledOutcome> {
    checkReadableTopic(topic);
    checkMessageId(messageId);
    const outcome = await this.d.timers.cancel(messageId, topic).catch(rethrowMapped);
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "ALREADY_DELIVERED",
        `Cannot cancel ${messageId}: it has already been delivered`,
      );
    }
    return { messageId, status: outcome };
  }

  /** Moves a scheduled message to a new delivery time. */
  async rescheduleScheduled(
    topic: string,
    messageId: string,
    deliverAt: number,
  ): Promise<ScheduledOutcome> {
    checkReadableTopic(topic);
    checkMessageId(messageId);
    const now = this.d.nowMs();
    const horizon = this.d.timerHorizonMs;
    if (!Number.isSafeInteger(deliverAt) || deliverAt < 0 || deliverAt - now > horizon) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot reschedule to ${deliverAt}: it must be an epoch ms within timerHorizonMs ${horizon} ms`,
      );
    }
    const at = Math.max(deliverAt, now);
    const outcome = await this.d.timers.reschedule(messageId, at, topic).catch(rethrowMapped);
    if (outcome === "ALREADY_DELIVERED") {
      throw new BrokerError(
        "ALREADY_DELIVERED",
        `Cannot reschedule ${messageId}: it has already been delivered`,
      );
    }
    return { messageId, status: "RESCHEDULED", deliverAt: at };
  }

  /** Cancels every pending scheduled message of `topic` whose keys hold `key`. */
  async cancelScheduledByKey(topic: string, key: string): Promise<ScheduledOutcome[]> {
    checkReadableTopic(topic);
    const out: ScheduledOutcome[] = [];
    for (const id of this.d.timers.idsByKey(topic, key)) {
      const outcome = await this.d.timers.cancel(id, topic);
      if (outcome === "CANCELLED") out.push({ messageId: id, status: outcome });
    }
    return out;
  }

  async createSchedule(input: CronScheduleInput): Promise<CronScheduleView> {
    await this.#check(input);
    return this.d.cron.create(input);
  }

  exportSchedule(id: string): Promise<CronScheduleExport> {
    return Promise.resolve().then(() => this.d.cron.export(id));
  }

  /** As createSchedule, keeping the schedule's id, creation time and last tick. */
  async importSchedule(s: CronScheduleExport): Promise<CronScheduleView> {
    await this.#check(s);
    const time = (t: unknown) => Number.isSafeInteger(t) && (t as number) >= 0;
    if (
      typeof s.id !== "string" || !SCHEDULE_ID.test(s.id) || !time(s.createdAt) ||
      !(s.lastTickAt === null || time(s.lastTickAt))
    ) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        "Cannot import a schedule without an id (letters, digits, - and _), createdAt and lastTickAt (ms, or null)",
      );
    }
    return this.d.cron.import(s);
  }

  async #check(input: CronScheduleInput): Promise<void> {
    await this.d.writableTopic(input.topic);
    this.d.checkMessage(input.message);
    checkCron(input.cron, input.timeZone ?? "UTC");
    const missed = input.missedTicks;
    if (missed !== undefined && missed !== "skip" && missed !== "fire_once") {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `Cannot use missedTicks ${JSON.stringify(missed)}: skip or fire_once`,
      );
    }
  }
  listSchedules(): Promise<CronScheduleView[]> {
    return Promise.resolve(this.d.cron.list());
  }
  getSchedule(id: string): Promise<CronScheduleView> {
    return Promise.resolve().then(() => this.d.cron.get(id));
  }
  setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView> {
    return Promise.resolve().then(() => this.d.cron.setPaused(id, paused));
  }
  deleteSchedule(id: string): Promise<void> {
    return Promise.resolve().then(() => this.d.cron.delete(id));
  }
}

/** What newId() makes (UUIDs) and what an import may name. */
const SCHEDULE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function checkMessageId(messageId: string): void {
  if (!MESSAGE_ID_PATTERN.test(messageId)) {
    throw new BrokerError(
      "INVALID_PARAMETER",
      `Cannot look up message id ${JSON.stringify(messageId.slice(0, 64))}`,
    );
  }
}

function rethrowMapped(err: unknown): never {
  throw fromStoreError(err);
}
