// Property names and system topics with a meaning to the broker: RocketMQ's MessageConst
// (reference/rocketmq.md, "Property keys"), plus the few of our own, marked. One module so
// every layer writes and reads the same strings; storage/ holds it because dispatch and
// the index read TAGS, KEYS, UNIQ_KEY and DELAY.

/** One tag; its Java hashCode is the ConsumeQueue tagsCode. */
export const PROPERTY_TAGS = "TAGS";
/** Space-separated business keys, each indexed as topic#key. */
export const PROPERTY_KEYS = "KEYS";
/** The message id (RocketMQ's UNIQ_CLIENT_MESSAGE_ID_KEYIDX), indexed as topic#id. */
export const PROPERTY_UNIQ_KEY = "UNIQ_KEY";
export const PROPERTY_WAIT_STORE_MSG_OK = "WAIT";
/** Delay level 1-18 while the message waits in SCHEDULE_TOPIC_XXXX. */
export const PROPERTY_DELAY = "DELAY";
export const PROPERTY_TRANSACTION_PREPARED = "TRAN_MSG";
export const PROPERTY_PRODUCER_GROUP = "PGROUP";
export const PROPERTY_SHARDING_KEY = "__SHARDINGKEY";
/** Where a waiting (delayed, timed, half) message really goes. */
export const PROPERTY_REAL_TOPIC = "REAL_TOPIC";
export const PROPERTY_REAL_QUEUE_ID = "REAL_QID";
export const PROPERTY_RETRY_TOPIC = "RETRY_TOPIC";
export const PROPERTY_RECONSUME_TIME = "RECONSUME_TIME";
export const PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES";
export const PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID";
export const PROPERTY_TRANSACTION_ID = "__transactionId__";
export const PROPERTY_TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES";
/** Absolute delivery time (epoch ms) of a timer message. */
export const PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS";
export const PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC";
export const PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS";
export const PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS";
/** How often a far timer was copied forward (timerRollWindowMs). */
export const PROPERTY_TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES";
export const PROPERTY_INNER_NUM = "INNER_NUM";
export const PROPERTY_INNER_BASE = "INNER_BASE";
export const PROPERTY_POP_CK = "POP_CK";
export const PROPERTY_DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC";

// Ours, not RocketMQ's.
/** The producer's Content-Type, returned on consume. */
export const PROPERTY_CONTENT_TYPE = "__CONTENT_TYPE";
/** A cancel marker names the CommitLog offset of the timer record it cancels. */
export const PROPERTY_TIMER_CANCEL_OFFSET = "TIMER_CANCEL_OFFSET";
/** Where a webhook retry came from. */
export const PROPERTY_ORIGIN_QUEUE_ID = "ORIGIN_QUEUE_ID";
export const PROPERTY_ORIGIN_QUEUE_OFFSET = "ORIGIN_QUEUE_OFFSET";

/** Delay levels wait here, one queue per level (ScheduleMessageService). */
export const SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX";
/** Timer messages wait here (TimerMessageStore). */
export const TIMER_TOPIC = "rmq_sys_wheel_timer";
/** POP checkpoints and ack markers (PopReviveService). */
export const REVIVE_TOPIC = "rmq_sys_REVIVE_LOG";
/** Half (prepared) transactional messages wait here, queue 0 (TransactionalMessageUtil). */
export const TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC";
/** One op record per decided transaction, queue 0 (the half queue's id). */
export const TRANS_OP_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/** Ours: the decision an op record carries (COMMIT, ROLLBACK or DISCARD). */
export const PROPERTY_TRANSACTION_OP = "__TRAN_OP";

/** Property keys the broker gives meaning to; a producer cannot set them directly. */
export const RESERVED_PROPERTIES: ReadonlySet<string> = new Set([
  PROPERTY_TAGS,
  PROPERTY_KEYS,
  PROPERTY_UNIQ_KEY,
  PROPERTY_WAIT_STORE_MSG_OK,
  PROPERTY_DELAY,
  PROPERTY_TRANSACTION_PREPARED,
  PROPERTY_PRODUCER_GROUP,
  PROPERTY_REAL_TOPIC,
  PROPERTY_REAL_QUEUE_ID,
  PROPERTY_RETRY_TOPIC,
  PROPERTY_RECONSUME_TIME,
  PROPERTY_MAX_RECONSUME_TIMES,
  PROPERTY_ORIGIN_MESSAGE_ID,
  PROPERTY_TIMER_DELIVER_MS,
  PROPERTY_TIMER_DELAY_SEC,
  PROPERTY_TIMER_DELAY_MS,
  PROPERTY_TIMER_OUT_MS,
  PROPERTY_TIMER_ROLL_TIMES,
  PROPERTY_DLQ_ORIGIN_TOPIC,
  PROPERTY_POP_CK,
  PROPERTY_INNER_NUM,
  PROPERTY_INNER_BASE,
  PROPERTY_TRANSACTION_CHECK_TIMES,
]);
