// Whether a draining group may leave a topic: every consumer group that holds a position
// in the topic on that broker group has consumed everything there (lag 0). Asked of the
// group's master itself (its operations views: listGroups, groupProgress).
import { BrokerError } from "../protocol/errors.ts";
import type { GroupLink } from "./route_source.ts";

/** Consumer groups with messages left on `link`'s queues of `topic`, with their lag. */
export async function lagOnGroup(
  link: GroupLink,
  topic: string,
): Promise<{ group: string; lag: number }[]> {
  const { listGroups, groupProgress } = link.client;
  if (!listGroups || !groupProgress) {
    throw new BrokerError(
      "BROKER_GROUP_NOT_DRAINED",
      `Cannot tell whether broker group ${link.name} is drained: its link has no operations views; use force`,
    );
  }
  const left: { group: string; lag: number }[] = [];
  for (const { group: name } of await listGroups.call(link.client)) {
    const progress = await groupProgress.call(link.client, name);
    const lag = progress.topics.find((t) => t.topic === topic)?.totalLag ?? 0;
    if (lag > 0) left.push({ group: name, lag });
  }
  return left;
}
