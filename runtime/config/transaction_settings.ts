// Settings of transactional messages: when a half message is first checked, how often
// after that, and when the broker gives up (reference/rocketmq.md §16).
import { choiceSetting, intSetting } from "../protocol/setting.ts";

export const TRANSACTION_SETTINGS = [
  intSetting("transactionTimeoutMs", "MQ_TRANSACTION_TIMEOUT_MS", {
    unit: "ms",
    default: 6000,
    min: 1,
    doc: "A half message with no decision is first checked this long after it was stored.",
    rocketmq: "transactionTimeOut",
  }),
  intSetting("transactionCheckIntervalMs", "MQ_TRANSACTION_CHECK_INTERVAL_MS", {
    unit: "ms",
    default: 1000,
    min: 1,
    doc:
      "Time between two checks of one undecided transaction, and the check service's longest sleep (RocketMQ checks every 30-60 s).",
    rocketmq: "transactionCheckInterval",
  }),
  intSetting("transactionCheckMax", "MQ_TRANSACTION_CHECK_MAX", {
    unit: "count",
    default: 15,
    min: 1,
    doc:
      "Checks before the broker gives up: the transaction is DISCARDED (op record written), nothing is delivered, and the half message stays findable (GET /v1/transactions/{id}) until fileReservedTime deletes its segment.",
    rocketmq: "transactionCheckMax",
  }),
  intSetting("transactionChecksInFlightMax", "MQ_TRANSACTION_CHECKS_IN_FLIGHT_MAX", {
    unit: "count",
    default: 64,
    min: 1,
    doc: "Checks the check service has out at once; the rest wait for the next pass.",
  }),
  intSetting("transactionChecksQueuedMax", "MQ_TRANSACTION_CHECKS_QUEUED_MAX", {
    unit: "count",
    default: 1000,
    min: 1,
    doc:
      "Checks waiting per producer group for a long poll (GET /v1/producer-groups/{group}/transaction-checks); the oldest goes first when full (it is asked again at its next check).",
  }),
  intSetting("transactionDecisionsCachedMax", "MQ_TRANSACTION_DECISIONS_CACHED_MAX", {
    unit: "count",
    default: 10_000,
    min: 1,
    doc:
      "Recent decisions kept in memory for repeated commits and state queries; older ones are read from the op topic through the index.",
  }),
  intSetting("transactionHalfCacheBytesMax", "MQ_TRANSACTION_HALF_CACHE_BYTES_MAX", {
    unit: "bytes",
    default: 64 * 1024 * 1024,
    defaultText: "67108864 (64 MiB)",
    doc:
      "Bodies of undecided transactions kept in memory, so a commit does not read its half message back from the CommitLog; past it, commits read it.",
  }),
  choiceSetting(
    "transactionFault",
    "MQ_TRANSACTION_FAULT",
    [
      "none",
      "kill-after-commit-put",
    ] as const,
    {
      default: "none",
      doc:
        "Tests only: kill-after-commit-put sends the broker SIGKILL after a commit has stored the real message and before its op record, to prove recovery.",
    },
  ),
] as const;
