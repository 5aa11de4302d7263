// What the cluster router answers for a topic spread over groups, from each group's own
// TopicConfig (docs/cluster.md): queue counts are totals over the groups (writable ones
// only for writeQueueNums: a draining group's topic is read-only), perm is the union of
// the groups' perms, order holds when any group's does. The queues' global ids are not
// 0…n-1: GET /v1/topics/{topic}/route lists them.
import { PERM_WRITE, type TopicConfig } from "../protocol/types.ts";

export function aggregateTopic(name: string, configs: TopicConfig[]): TopicConfig {
  return {
    name,
    readQueueNums: configs.reduce((s, c) => s + c.readQueueNums, 0),
    writeQueueNums: configs.reduce(
      (s, c) => s + ((c.perm & PERM_WRITE) !== 0 ? c.writeQueueNums : 0),
      0,
    ),
    perm: configs.reduce((p, c) => p | c.perm, 0),
    order: configs.some((c) => c.order),
  };
}

/** Every topic any group holds, aggregated over the groups that hold it, by name. */
export function aggregateTopics(perGroup: TopicConfig[][]): TopicConfig[] {
  const byName = new Map<string, TopicConfig[]>();
  for (const list of perGroup) {
    for (const c of list) byName.set(c.name, [...byName.get(c.name) ?? [], c]);
  }
  return [...byName.entries()].sort(([a], [b]) => a.localeCompare(b))
    .map(([name, configs]) => aggregateTopic(name, configs));
}
