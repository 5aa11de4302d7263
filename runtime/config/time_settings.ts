// Settings of time: delay levels' progress, the timer wheel, cron schedules.
import { intSetting } from "../protocol/setting.ts";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export const TIME_SETTINGS = [
  intSetting("flushDelayOffsetIntervalMs", "MQ_DELAY_OFFSET_PERSIST_MS", {
    unit: "ms",
    default: 10_000,
    min: 1,
    doc: "Delay-level progress (delayOffset.json) is persisted this often.",
    rocketmq: "flushDelayOffsetInterval",
  }),
  intSetting("timerPrecisionMs", "MQ_TIMER_PRECISION_MS", {
    unit: "ms",
    default: 10,
    min: 1,
    doc: "Timer wheel precision: a timer fires at most this long after its time.",
    rocketmq: "timerPrecisionMs",
  }),
  intSetting("timerHorizonMs", "MQ_TIMER_HORIZON_MS", {
    unit: "ms",
    default: 365 * DAY_MS,
    defaultText: "31536000000 (365 days)",
    min: 1,
    doc: "Latest accepted delivery time, from now (RocketMQ's is 3 days).",
    rocketmq: "timerMaxDelaySec",
  }),
  intSetting("timerRollWindowMs", "MQ_TIMER_ROLL_WINDOW_MS", {
    unit: "ms",
    default: DAY_MS,
    defaultText: "86400000 (24 h)",
    min: 1,
    doc:
      "A timer waits this long on one CommitLog record, then its message is copied forward; below fileReservedTime, so a far timer's message is never deleted under it.",
    rocketmq: "timerRollWindowSlot",
  }),
  intSetting("timerCheckpointIntervalMs", "MQ_TIMER_CHECKPOINT_MS", {
    unit: "ms",
    default: 1000,
    min: 1,
    doc: "The timer wheel's progress is checkpointed this often.",
    rocketmq: "timerFlushIntervalMs",
  }),
  intSetting("cronSchedulesMax", "MQ_CRON_SCHEDULES_MAX", {
    unit: "count",
    default: 1000,
    doc: "Cron schedules at once.",
  }),
] as const;
