// The NameServer role (reference/rocketmq.md §14): clients ask it where a topic's queues
// live (GET_ROUTEINFO_BY_TOPIC 105) and get RocketMQ's TopicRouteData from our route table,
// one BrokerData per broker group that holds the topic with its remoting addresses (master
// id 0). Admin tools ask for the cluster (106) and the topic list (206). Brokers register in
// the KV route table, not here: REGISTER_BROKER is not served.
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { PERM_INHERIT, PERM_READ, PERM_WRITE } from "../../runtime/protocol/types.ts";
import { type RemotingCommand, responseTo } from "./codec.ts";
import { RequestCode, ResponseCode } from "./codes.ts";
import { jsonBody, ok, optionalText, text } from "./headers.ts";
import type { RemotingAuth } from "./auth.ts";
import type { RequestHandler } from "./server.ts";

/** One broker group as the NameServer answers it. */
export interface NamesrvRoute {
  cluster: string;
  brokerName: string;
  /** Broker id ("0" is the master) to remoting host:port. */
  brokerAddrs: Record<string, string>;
  topics: { name: string; readQueueNums: number; writeQueueNums: number; perm: number }[];
}

export interface NamesrvOptions {
  /** The live broker groups (the route table). */
  routes(): Promise<NamesrvRoute[]>;
  /** Creates a topic unknown to every group (autoCreateTopicEnable); absent: refuse. */
  createTopic?: (name: string) => Promise<unknown>;
  /** Queues of the default topic (TBW102) a client copies for a new topic. */
  defaultTopicQueueNums: number;
  auth: RemotingAuth;
}

const PERM_RW = PERM_READ | PERM_WRITE; // retry and DLQ topics (§9)
const PERM_RWI = PERM_RW | PERM_INHERIT; // TBW102
const DEFAULT_TOPIC = "TBW102";

export function namesrvHandler(o: NamesrvOptions): RequestHandler {
  return async (req) => {
    const R = RequestCode;
    switch (req.code) {
      case R.GET_ROUTEINFO_BY_TOPIC:
        o.auth.authenticate(req);
        return await routeInfo(o, req);
      case R.GET_BROKER_CLUSTER_INFO:
        o.auth.authenticate(req);
        return ok(req, {}, jsonBody(clusterInfo(await o.routes())));
      case R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: {
        o.auth.authenticate(req);
        const names = new Set((await o.routes()).flatMap((r) => r.topics.map((t) => t.name)));
        return ok(req, {}, jsonBody({ topicList: [...names].sort() }));
      }
      case R.GET_KV_CONFIG:
      case R.GET_KV_CONFIG_BY_VALUE:
      case R.GET_KVLIST_BY_NAMESPACE:
        // No KV config is kept: RocketMQ's own answer for a missing item.
        return responseTo(
          req,
          ResponseCode.QUERY_NOT_FOUND,
          `No config item, Namespace: ${optionalText(req, "namespace") ?? ""} Key: ${
            optionalText(req, "key") ?? ""
          }`,
        );
      default:
        return responseTo(
          req,
          ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
          `Request code ${req.code} is not supported by this NameServer`,
        );
    }
  };
}

async function routeInfo(o: NamesrvOptions, req: RemotingCommand): Promise<RemotingCommand> {
  const topic = text(req, "topic");
  let routes = await o.routes();
  const holding = (all: NamesrvRoute[]) =>
    all.filter((r) => r.topics.some((t) => t.name === topic));
  let found = holding(routes);
  if (topic.startsWith("%RETRY%") || topic.startsWith("%DLQ%") || topic === DEFAULT_TOPIC) {
    // Every group keeps a consumer group's own topics; TBW102 is the template for new ones.
    const [queues, perm] = topic === DEFAULT_TOPIC
      ? [o.defaultTopicQueueNums, PERM_RWI]
      : [1, PERM_RW];
    return ok(req, {}, jsonBody(routeData(routes, () => ({ queues, perm }))));
  }
  if (found.length === 0 && o.createTopic) {
    try {
      await o.createTopic(topic);
    } catch (err) {
      if (!(err instanceof BrokerError)) throw err;
      return responseTo(req, ResponseCode.TOPIC_NOT_EXIST, err.message);
    }
    routes = await o.routes();
    found = holding(routes);
  }
  if (found.length === 0) {
    return responseTo(
      req,
      ResponseCode.TOPIC_NOT_EXIST,
      `No topic route info in name server for the topic: ${topic}`,
    );
  }
  return ok(req, {}, jsonBody(routeData(found, (r) => r.topics.find((t) => t.name === topic)!)));
}

function routeData(
  routes: NamesrvRoute[],
  queuesOf: (r: NamesrvRoute) =>
    | { queues: number; perm: number }
    | { readQueueNums: number; writeQueueNums: number; perm: number },
) {
  return {
    queueDatas: routes.map((r) => {
      const q = queuesOf(r);
      const read = "queues" in q ? q.queues : q.readQueueNums;
      const write = "queues" in q ? q.queues : q.writeQueueNums;
      return {
        brokerName: r.brokerName,
        readQueueNums: read,
        writeQueueNums: write,
        perm: q.perm,
        topicSysFlag: 0,
      };
    }),
    brokerDatas: routes.map(brokerData),
    filterServerTable: {},
  };
}

function brokerData(r: NamesrvRoute) {
  return { cluster: r.cluster, brokerName: r.brokerName, brokerAddrs: r.brokerAddrs };
}

function clusterInfo(routes: NamesrvRoute[]) {
  const brokerAddrTable: Record<string, ReturnType<typeof brokerData>> = {};
  const clusterAddrTable: Record<string, string[]> = {};
  for (const r of routes) {
    brokerAddrTable[r.brokerName] = brokerData(r);
    (clusterAddrTable[r.cluster] ??= []).push(r.brokerName);
  }
  return { brokerAddrTable, clusterAddrTable };
}
