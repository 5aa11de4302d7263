// RocketMQ's RequestCode and ResponseCode numbers (reference/rocketmq.md §17), and how a
// BrokerError from the core becomes a response code. Pure.
import type { BrokerError } from "../../runtime/protocol/errors.ts";

export const RequestCode = {
  SEND_MESSAGE: 10,
  PULL_MESSAGE: 11,
  QUERY_MESSAGE: 12,
  QUERY_CONSUMER_OFFSET: 14,
  UPDATE_CONSUMER_OFFSET: 15,
  UPDATE_AND_CREATE_TOPIC: 17,
  GET_ALL_TOPIC_CONFIG: 21,
  GET_BROKER_RUNTIME_INFO: 28,
  SEARCH_OFFSET_BY_TIMESTAMP: 29,
  GET_MAX_OFFSET: 30,
  GET_MIN_OFFSET: 31,
  VIEW_MESSAGE_BY_ID: 33,
  HEART_BEAT: 34,
  UNREGISTER_CLIENT: 35,
  CONSUMER_SEND_MSG_BACK: 36,
  END_TRANSACTION: 37,
  GET_CONSUMER_LIST_BY_GROUP: 38,
  CHECK_TRANSACTION_STATE: 39,
  NOTIFY_CONSUMER_IDS_CHANGED: 40,
  LOCK_BATCH_MQ: 41,
  UNLOCK_BATCH_MQ: 42,
  GET_KV_CONFIG: 101,
  GET_KV_CONFIG_BY_VALUE: 217,
  GET_ROUTEINFO_BY_TOPIC: 105,
  GET_BROKER_CLUSTER_INFO: 106,
  GET_ALL_TOPIC_LIST_FROM_NAMESERVER: 206,
  GET_KVLIST_BY_NAMESPACE: 219,
  SEND_MESSAGE_V2: 310,
  SEND_BATCH_MESSAGE: 320,
  POP_MESSAGE: 200050,
  ACK_MESSAGE: 200051,
  CHANGE_MESSAGE_INVISIBLETIME: 200053,
} as const;

export const ResponseCode = {
  SUCCESS: 0,
  SYSTEM_ERROR: 1,
  SYSTEM_BUSY: 2,
  REQUEST_CODE_NOT_SUPPORTED: 3,
  FLUSH_DISK_TIMEOUT: 10,
  SLAVE_NOT_AVAILABLE: 11,
  FLUSH_SLAVE_TIMEOUT: 12,
  MESSAGE_ILLEGAL: 13,
  SERVICE_NOT_AVAILABLE: 14,
  VERSION_NOT_SUPPORTED: 15,
  NO_PERMISSION: 16,
  TOPIC_NOT_EXIST: 17,
  PULL_NOT_FOUND: 19,
  PULL_RETRY_IMMEDIATELY: 20,
  PULL_OFFSET_MOVED: 21,
  QUERY_NOT_FOUND: 22,
  SUBSCRIPTION_PARSE_FAILED: 23,
  SUBSCRIPTION_NOT_EXIST: 24,
  SUBSCRIPTION_GROUP_NOT_EXIST: 26,
  NO_MESSAGE: 208,
  POLLING_FULL: 209,
  POLLING_TIMEOUT: 210,
} as const;

/** PullSysFlag bits. */
export const PullSysFlag = { COMMIT_OFFSET: 1, SUSPEND: 2, SUBSCRIPTION: 4, CLASS_FILTER: 8 };

/** The response code a refusal from the core maps to. */
export function responseCodeOf(err: BrokerError): number {
  switch (err.code) {
    case "TOPIC_NOT_FOUND":
      return ResponseCode.TOPIC_NOT_EXIST;
    case "GROUP_NOT_FOUND":
      return ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST;
    case "UNAUTHORIZED":
    case "FORBIDDEN":
    case "TOPIC_PERMISSION_DENIED":
    case "SYSTEM_TOPIC":
      return ResponseCode.NO_PERMISSION;
    case "MESSAGE_NOT_FOUND":
      return ResponseCode.QUERY_NOT_FOUND;
    case "RECEIPT_HANDLE_UNKNOWN":
    case "RECEIPT_HANDLE_EXPIRED":
    case "RECEIPT_HANDLE_SETTLED":
      return ResponseCode.NO_MESSAGE;
    case "OFFSET_OUT_OF_RANGE":
      return ResponseCode.PULL_OFFSET_MOVED;
    case "TOO_MANY_WAITING":
      return ResponseCode.SYSTEM_BUSY;
    case "FLUSH_TIMEOUT":
      return ResponseCode.FLUSH_DISK_TIMEOUT;
    case "REPLICATION_TIMEOUT": // written on the master, not acknowledged: a send status
      return err.extensions.cause === "SLAVE_NOT_AVAILABLE"
        ? ResponseCode.SLAVE_NOT_AVAILABLE
        : ResponseCode.FLUSH_SLAVE_TIMEOUT;
    case "REPLICAS_NOT_AVAILABLE":
      return ResponseCode.SLAVE_NOT_AVAILABLE;
    case "STORE_NOT_WRITABLE":
    case "BROKER_UNAVAILABLE":
    case "NOT_LEADER":
      return ResponseCode.SERVICE_NOT_AVAILABLE;
    case "INTERNAL":
      return ResponseCode.SYSTEM_ERROR;
    default:
      return err.status >= 500 ? ResponseCode.SYSTEM_ERROR : ResponseCode.MESSAGE_ILLEGAL;
  }
}
