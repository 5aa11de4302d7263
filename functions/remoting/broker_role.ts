// The broker role of the remoting front end: one handler per request code, each a thin
// adapter over the core API (headers.ts's RemotingCore). Unknown codes answer
// REQUEST_CODE_NOT_SUPPORTED with a remark; every request is authenticated first (auth.ts).
import { type RemotingCommand, responseTo } from "./codec.ts";
import { RequestCode, ResponseCode } from "./codes.ts";
import { RemotingConsumers } from "./consumers.ts";
import {
  type ConsumerDeps,
  handleConsumerList,
  handleHeartbeat,
  handleLock,
  handleQueryOffset,
  handleSendBack,
  handleUnregister,
  handleUpdateOffset,
  unregister,
} from "./consumer_handlers.ts";
import { handlePull } from "./pull_handler.ts";
import { handleAck, handleChangeInvisible, handlePop, type PopDeps } from "./pop_handlers.ts";
import { PopHandles } from "./pop_handles.ts";
import { offsetMessageIdPrefix } from "./message.ts";
import { handleSend, longHeader } from "./send_handlers.ts";
import { handleEndTransaction, RemotingProducers } from "./transactions.ts";
import {
  handleCreateTopic,
  handleQueryMessage,
  handleQueueOffset,
  handleRuntimeInfo,
  handleSearchOffset,
  handleViewById,
} from "./admin_handlers.ts";
import type { RemotingAuth } from "./auth.ts";
import type { RemotingCore } from "./headers.ts";
import type { Connection, RequestHandler } from "./server.ts";
import type { Principal, Right } from "../auth.ts";

export interface BrokerRoleOptions {
  core: RemotingCore;
  auth: RemotingAuth;
  /** The store host records carry (offset message ids). */
  storeHost: { ip: Uint8Array; port: number };
  autoCreateGroups: boolean;
  /** Bound on the (group, topic) subscriptions remembered from heartbeats. */
  subscriptionsMax: number;
  /** POP receipts remembered for remoting clients (remotingPopHandlesMax). */
  popHandlesMax: number;
  /** More request codes; a code here replaces the built-in answer. */
  extraHandlers?: ReadonlyMap<number, RemotingHandler>;
}

export type RemotingHandler = (
  req: RemotingCommand,
  conn: Connection,
) => Promise<RemotingCommand | undefined>;
type Handler = RemotingHandler;

export class BrokerRole {
  readonly consumers: RemotingConsumers;
  readonly producers: RemotingProducers;
  readonly #handlers = new Map<number, Handler>();
  readonly #o: BrokerRoleOptions;

  constructor(o: BrokerRoleOptions) {
    this.#o = o;
    this.consumers = new RemotingConsumers(o.subscriptionsMax);
    const core = o.core;
    const c: ConsumerDeps = {
      core,
      consumers: this.consumers,
      autoCreateGroups: o.autoCreateGroups,
    };
    const pop: PopDeps = { ...c, handles: new PopHandles(o.popHandlesMax, Date.now) };
    const sendDeps = {
      core,
      idPrefix: offsetMessageIdPrefix(o.storeHost.ip, o.storeHost.port),
    };
    this.producers = new RemotingProducers(core, sendDeps.idPrefix);
    const send = (req: RemotingCommand) => handleSend(sendDeps, req);
    const R = RequestCode;
    const on = (code: number, h: Handler) => this.#handlers.set(code, h);
    on(R.SEND_MESSAGE, send);
    on(R.SEND_MESSAGE_V2, send);
    on(R.SEND_BATCH_MESSAGE, send);
    on(R.PULL_MESSAGE, (req, conn) => handlePull({ core, consumers: this.consumers }, req, conn));
    on(R.POP_MESSAGE, (req, conn) => handlePop(pop, req, conn));
    on(R.ACK_MESSAGE, (req) => handleAck(pop, req));
    on(R.CHANGE_MESSAGE_INVISIBLETIME, (req) => handleChangeInvisible(pop, req));
    on(R.HEART_BEAT, (req, conn) => {
      this.producers.heartbeat(req, conn); // transaction check channels (transactions.ts)
      return handleHeartbeat(c, req, conn);
    });
    on(R.END_TRANSACTION, (req) => handleEndTransaction(core, req));
    on(R.UNREGISTER_CLIENT, (req, conn) => handleUnregister(c, req, conn));
    on(R.GET_CONSUMER_LIST_BY_GROUP, (req) => handleConsumerList(c, req));
    on(R.QUERY_CONSUMER_OFFSET, (req) => handleQueryOffset(c, req));
    on(R.UPDATE_CONSUMER_OFFSET, (req) => handleUpdateOffset(c, req));
    on(R.CONSUMER_SEND_MSG_BACK, (req) => handleSendBack(c, req));
    on(R.LOCK_BATCH_MQ, (req) => handleLock(c, req, false));
    on(R.UNLOCK_BATCH_MQ, (req) => handleLock(c, req, true));
    on(R.GET_MAX_OFFSET, (req) => handleQueueOffset(core, req, "max"));
    on(R.GET_MIN_OFFSET, (req) => handleQueueOffset(core, req, "min"));
    on(R.SEARCH_OFFSET_BY_TIMESTAMP, (req) => handleSearchOffset(core, req));
    on(R.VIEW_MESSAGE_BY_ID, (req) => handleViewById(core, req));
    on(R.QUERY_MESSAGE, (req) => handleQueryMessage(core, req));
    on(R.UPDATE_AND_CREATE_TOPIC, (req) => handleCreateTopic(core, req));
    on(R.GET_BROKER_RUNTIME_INFO, (req) => handleRuntimeInfo(core, req));
    for (const [code, handler] of o.extraHandlers ?? []) on(code, handler);
  }

  readonly handle: RequestHandler = (req, conn) => {
    const handler = this.#handlers.get(req.code);
    if (!handler) return notSupported(req);
    this.#authorize(req);
    return handler(req, conn);
  };

  /** A closed connection's consumers leave their groups (the rest rebalance). */
  connectionClosed(conn: Connection): void {
    this.producers.closed(conn);
    const c: ConsumerDeps = {
      core: this.#o.core,
      consumers: this.consumers,
      autoCreateGroups: false,
    };
    for (const [group, clientId] of this.consumers.closed(conn)) {
      void unregister(c, group, clientId);
    }
  }

  #authorize(req: RemotingCommand): void {
    const auth = this.#o.auth;
    if (auth.open) return;
    const principal = auth.authenticate(req);
    const need = rightsOf(req);
    if (need) check(auth, principal, need[0], need[1]);
  }
}

function check(
  auth: RemotingAuth,
  principal: Principal,
  right: Right,
  resources: { topic?: string; group?: string },
) {
  // A group's own retry and DLQ topics belong to the group: rights on the group cover them.
  const t = resources.topic;
  if (t?.startsWith("%RETRY%") || t?.startsWith("%DLQ%")) {
    auth.authorize(principal, right, { group: resources.group ?? t.replace(/^%\w+%/, "") });
  } else auth.authorize(principal, right, resources);
}

/** The right a request needs and on what; undefined: a valid signature is enough. */
function rightsOf(
  raw: RemotingCommand,
): [Right, { topic?: string; group?: string }] | undefined {
  const R = RequestCode;
  const req = longHeader(raw);
  const f = req.extFields;
  switch (req.code) {
    case R.SEND_MESSAGE:
    case R.SEND_MESSAGE_V2:
    case R.SEND_BATCH_MESSAGE:
      return ["publish", { topic: f.topic ?? "" }];
    case R.PULL_MESSAGE:
    case R.POP_MESSAGE:
      return ["subscribe", { topic: f.topic ?? "", group: f.consumerGroup ?? "" }];
    case R.QUERY_CONSUMER_OFFSET:
    case R.UPDATE_CONSUMER_OFFSET:
    case R.GET_CONSUMER_LIST_BY_GROUP:
    case R.ACK_MESSAGE:
    case R.CHANGE_MESSAGE_INVISIBLETIME:
      return ["subscribe", { group: f.consumerGroup ?? "" }];
    case R.CONSUMER_SEND_MSG_BACK:
      return ["subscribe", { group: f.group ?? "" }];
    case R.GET_MAX_OFFSET:
    case R.GET_MIN_OFFSET:
    case R.SEARCH_OFFSET_BY_TIMESTAMP:
    case R.QUERY_MESSAGE:
      return ["see", { topic: f.topic ?? "" }];
    case R.END_TRANSACTION:
      return ["publish", f.topic ? { topic: f.topic } : {}];
    case R.UPDATE_AND_CREATE_TOPIC:
    case R.VIEW_MESSAGE_BY_ID:
    case R.GET_BROKER_RUNTIME_INFO:
      return ["admin", {}];
    default:
      return undefined; // heartbeat, unregister, locks: their groups ride in the body
  }
}

function notSupported(req: RemotingCommand): Promise<RemotingCommand> {
  const remark = `Request code ${req.code} is not supported by this broker`;
  return Promise.resolve(responseTo(req, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark));
}
