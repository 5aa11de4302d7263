// A single broker's answer to the cluster admin calls (ClusterAdminApi): its topics live
// on its own group alone, at slot 0, so global queue ids are its own. Adding, draining or
// removing groups needs the cluster router (stateless functions over many groups,
// docs/cluster.md), and so do topic upserts naming other groups.
import type { ClusterAdminApi } from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { TopicConfig, TopicUpsert } from "../protocol/types.ts";
import { groupQueues } from "../cluster/route_view.ts";

export function singleGroupRoutes(
  brokerName: string,
  getTopic: (name: string) => Promise<TopicConfig>,
): ClusterAdminApi {
  const refuse = (what: string) =>
    Promise.reject(
      new BrokerError(
        "CLUSTER_ROUTER_REQUIRED",
        `Cannot ${what}: this broker serves its own group only; it needs the cluster router (functions over several broker groups, docs/cluster.md)`,
      ),
    );
  return {
    async topicRoute(topic) {
      const config = await getTopic(topic);
      return {
        topic,
        brokerGroups: [{ name: brokerName, url: "", epoch: 0, state: "active", slot: 0 }],
        queues: groupQueues(brokerName, 0, "active", config),
      };
    },
    addTopicGroup: (topic, group) => refuse(`add broker group ${group} to topic ${topic}`),
    drainTopicGroup: (topic, group) => refuse(`drain broker group ${group} of topic ${topic}`),
    removeTopicGroup: (topic, group) => refuse(`remove broker group ${group} from topic ${topic}`),
  };
}

/** The upsert a single broker applies: `brokerGroups` may name only itself and
 * `brokerGroupCount` be 1; both are dropped before the topic table sees the update. */
export function singleGroupUpsert(brokerName: string, update: TopicUpsert): TopicUpsert {
  const { brokerGroups, brokerGroupCount, ...rest } = update;
  const others = (brokerGroups ?? []).filter((g) => g !== brokerName);
  if (others.length > 0 || (brokerGroupCount ?? 1) !== 1) {
    throw new BrokerError(
      "CLUSTER_ROUTER_REQUIRED",
      `Cannot spread a topic over ${
        others.length > 0 ? `broker groups ${others.join(", ")}` : `${brokerGroupCount} groups`
      }: this broker serves its own group (${brokerName}) only; it needs the cluster router (docs/cluster.md)`,
    );
  }
  return rest;
}
