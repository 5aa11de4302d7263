// The cluster router's data plane (issue #26; docs/cluster.md "Data plane: routing rules"): a
// BrokerClient for stateless functions whose topics span several broker groups. Each call
// goes to the group that owns its queue (global ids: runtime/protocol/cluster_types.ts),
// is spread over groups (produce, POP) or fans out and merges (offsets, views). Composition
// only: the rules live in the routers beside it. Topic administration (records in the
// coordination store, expansion, drain) is the control plane's, given as `topics`.
import type {
  AdminApi,
  BrokerClient,
  ClusterAdminApi,
  OpsApi,
  TransactionApi,
  TransactionCheckHost,
} from "../protocol/core_api.ts";
import type { ClusterRouteSource } from "./route_source.ts";
import { ClusterContext, type ClusterRouterOptions } from "./context.ts";
import { ProduceRouter } from "./produce_router.ts";
import { PopRouter } from "./pop_router.ts";
import { ConsumeRouter } from "./consume_router.ts";
import { MembershipRouter } from "./membership_router.ts";
import { TransactionRouter } from "./transaction_router.ts";
import { LookupRouter } from "./lookup_router.ts";
import { AdminRouter } from "./admin_router.ts";
import { SubscriptionRouter } from "./subscription_router.ts";
import { OpsRouter } from "./ops_router.ts";
import { TransactionCheckRelay } from "./check_relay.ts";

/** What the router asks of the control plane's topic admin (runtime/cluster/topic_admin.ts,
 * ClusterTopicAdmin): topics as the cluster sees them, routes, expansion and drain. */
export interface ClusterTopicAdminPort
  extends
    Pick<AdminApi, "upsertTopic" | "getTopic" | "listTopics" | "deleteTopic">,
    ClusterAdminApi {}

type Api = BrokerClient & TransactionApi & OpsApi & TransactionCheckHost;

export class ClusterClient implements Api {
  readonly #ctx: ClusterContext;
  readonly #produce: ProduceRouter;
  readonly #pop: PopRouter;
  readonly #consume: ConsumeRouter;
  readonly #members: MembershipRouter;
  readonly #tx: TransactionRouter;
  readonly #lookup: LookupRouter;
  readonly #admin: AdminRouter;
  readonly #subs: SubscriptionRouter;
  readonly #ops: OpsRouter;
  readonly #checks: TransactionCheckRelay;

  constructor(
    readonly routes: ClusterRouteSource,
    private readonly topics: ClusterTopicAdminPort,
    options: ClusterRouterOptions = {},
  ) {
    const ctx = this.#ctx = new ClusterContext(routes, options);
    this.#produce = new ProduceRouter(ctx);
    this.#pop = new PopRouter(ctx);
    this.#consume = new ConsumeRouter(ctx);
    this.#members = new MembershipRouter(ctx);
    this.#tx = new TransactionRouter(ctx, this.#produce);
    this.#lookup = new LookupRouter(ctx);
    this.#admin = new AdminRouter(ctx);
    this.#subs = new SubscriptionRouter(ctx);
    this.#ops = new OpsRouter(ctx);
    const s = ctx.settings;
    this.#checks = new TransactionCheckRelay(this, {
      waitMs: s.clusterCheckRelayWaitMs,
      max: s.clusterCheckRelayMax,
      retryMs: s.clusterCheckRelayRetryMs,
      log: ctx.log,
    });
  }

  /** Stops the transaction-check relay's polls (the front ends' streams end first). */
  close(): Promise<void> {
    return this.#checks.close();
  }

  cacheStats(): { hits: number; misses: number } {
    return this.routes.cacheStats();
  }

  /** Batch calls the produce coalescer made and the single produces they carried. */
  coalesceStats(): { batches: number; messages: number } {
    const { batches, messages } = this.#produce.coalescer;
    return { batches, messages };
  }

  // ProducerApi
  produce: Api["produce"] = (t, m) => this.#produce.produce(t, m);
  produceBatch: Api["produceBatch"] = (t, ms) => this.#produce.produceBatch(t, ms);
  cancelScheduled: Api["cancelScheduled"] = (t, id) => this.#lookup.cancelScheduled(t, id);
  cancelScheduledByKey: Api["cancelScheduledByKey"] = (t, k) =>
    this.#lookup.cancelScheduledByKey(t, k);
  rescheduleScheduled: Api["rescheduleScheduled"] = (t, id, at) =>
    this.#lookup.rescheduleScheduled(t, id, at);

  // ConsumerApi
  pull: Api["pull"] = (t, q, r, s) => this.#consume.pull(t, q, r, s);
  receive: Api["receive"] = (g, o, s) => this.#pop.receive(g, o, s);
  ack: Api["ack"] = (g, h) => this.#pop.ack(g, h);
  ackBatch: Api["ackBatch"] = (g, hs) => this.#pop.ackBatch(g, hs);
  nack: Api["nack"] = (g, h, d) => this.#pop.nack(g, h, d);
  changeInvisibleTime: Api["changeInvisibleTime"] = (g, h, ms) =>
    this.#pop.changeInvisibleTime(g, h, ms);
  deadLetter = (g: string, h: string): Promise<void> => this.#pop.deadLetter(g, h);
  commitOffset: Api["commitOffset"] = (g, t, q, o) => this.#consume.commitOffset(g, t, q, o);
  getOffsets: Api["getOffsets"] = (g, t) => this.#consume.getOffsets(g, t);
  getOffset: Api["getOffset"] = (g, t, q) => this.#consume.getOffset(g, t, q);
  heartbeat: Api["heartbeat"] = (g, d) => this.#members.heartbeat(g, d);
  unregister: Api["unregister"] = (g, c) => this.#members.unregister(g, c);
  /** Over the topic's global queue list, or the caller's own list of global ids. */
  assignment: Api["assignment"] = (g, c, t, o) => this.#members.assignment(g, c, t, o?.queueIds);
  lockQueues: Api["lockQueues"] = (g, c, t, qs, u) => this.#consume.lockQueues(g, c, t, qs, u);

  // AdminApi: topics are the control plane's
  upsertTopic: Api["upsertTopic"] = (n, u) => this.topics.upsertTopic(n, u);
  getTopic: Api["getTopic"] = (n) => this.topics.getTopic(n);
  listTopics: Api["listTopics"] = () => this.topics.listTopics();
  deleteTopic: Api["deleteTopic"] = (n) => this.topics.deleteTopic(n);

  // ClusterAdminApi: the control plane's too
  topicRoute: Api["topicRoute"] = (t, o) => this.topics.topicRoute(t, o);
  addTopicGroup: Api["addTopicGroup"] = (t, g) => this.topics.addTopicGroup(t, g);
  drainTopicGroup: Api["drainTopicGroup"] = (t, g) => this.topics.drainTopicGroup(t, g);
  removeTopicGroup: Api["removeTopicGroup"] = (t, g, o) => this.topics.removeTopicGroup(t, g, o);
  upsertGroup: Api["upsertGroup"] = (g, s) => this.#admin.upsertGroup(g, s);
  getGroup: Api["getGroup"] = (g) => this.#admin.getGroup(g);
  resetOffsetsByTime: Api["resetOffsetsByTime"] = (g, t, ts) =>
    this.#consume.resetOffsetsByTime(g, t, ts);
  listDlq: Api["listDlq"] = (g, o) => this.#admin.listDlq(g, o);
  redriveDlq: Api["redriveDlq"] = (g, ids) => this.#admin.redriveDlq(g, ids);
  purgeDlq: Api["purgeDlq"] = (g) => this.#admin.purgeDlq(g);
  createSchedule: Api["createSchedule"] = (i) => this.#admin.createSchedule(i);
  listSchedules: Api["listSchedules"] = () => this.#admin.listSchedules();
  getSchedule: Api["getSchedule"] = (id) => this.#admin.getSchedule(id);
  setSchedulePaused: Api["setSchedulePaused"] = (id, p) => this.#admin.setSchedulePaused(id, p);
  deleteSchedule: Api["deleteSchedule"] = (id) => this.#admin.deleteSchedule(id);
  upsertSubscription: Api["upsertSubscription"] = (g, i) => this.#subs.upsertSubscription(g, i);
  listSubscriptions: Api["listSubscriptions"] = (o) => this.#subs.listSubscriptions(o);
  getSubscription: Api["getSubscription"] = (g) => this.#subs.getSubscription(g);
  deleteSubscription: Api["deleteSubscription"] = (g) => this.#subs.deleteSubscription(g);
  setSubscriptionPaused: Api["setSubscriptionPaused"] = (g, p) =>
    this.#subs.setSubscriptionPaused(g, p);
  replaySubscription: Api["replaySubscription"] = (g, ts) => this.#subs.replaySubscription(g, ts);
  listDeliveries: Api["listDeliveries"] = (g, q) => this.#subs.listDeliveries(g, q);
  getMessageById: Api["getMessageById"] = (id, t) => this.#lookup.getMessageById(id, t);
  findMessages: Api["findMessages"] = (t, q) => this.#lookup.findMessages(t, q);
  health: Api["health"] = () => this.#ops.health();

  // TransactionApi
  beginTransaction: Api["beginTransaction"] = (t, m, pg) => this.#tx.beginTransaction(t, m, pg);
  endTransaction: Api["endTransaction"] = (id, d, o) => this.#tx.endTransaction(id, d, o);
  getTransaction: Api["getTransaction"] = (id) => this.#tx.getTransaction(id);
  setTransactionCheck: Api["setTransactionCheck"] = (g, i) => this.#tx.setTransactionCheck(g, i);
  getTransactionCheck: Api["getTransactionCheck"] = (g) => this.#tx.getTransactionCheck(g);
  deleteTransactionCheck: Api["deleteTransactionCheck"] = (g) => this.#tx.deleteTransactionCheck(g);
  listTransactionChecks: Api["listTransactionChecks"] = (o) => this.#tx.listTransactionChecks(o);
  pollTransactionChecks: Api["pollTransactionChecks"] = (g, o, s) =>
    this.#tx.pollTransactionChecks(g, o, s);
  /** A producer connected here (gRPC Telemetry): its group's checks are relayed to it. */
  registerTransactionCheckChannel: Api["registerTransactionCheckChannel"] = (g, c) =>
    this.#checks.registerTransactionCheckChannel(g, c);

  // OpsApi
  listGroups: Api["listGroups"] = () => this.#ops.listGroups();
  topicStats: Api["topicStats"] = (t) => this.#ops.topicStats(t);
  groupProgress: Api["groupProgress"] = (g) => this.#ops.groupProgress(g);
  clusterView: Api["clusterView"] = () => this.#ops.clusterView();
}
