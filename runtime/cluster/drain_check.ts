// Whether a draining group may leave a topic: its master answers drainStatus (what is still
// owed on the topic there: runtime/core/drain_status.ts) for every consumer group of the
// topic, including those known only on the topic's other groups (they hold no position on
// the draining one yet: all of its messages are owed to them).
import type { DrainStatusApi } from "../protocol/core_api.ts";
import type { DrainStatus } from "../protocol/ops_types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { GroupLink } from "./route_source.ts";

/** The draining group's drain status, asked with the consumer groups of `others`. */
export async function drainStatusOf(
  link: GroupLink,
  others: readonly GroupLink[],
  topic: string,
): Promise<DrainStatus> {
  const consumers = new Set<string>();
  for (const other of others) {
    const status = await statusCall(other)(topic).catch((err) => {
      if (err instanceof BrokerError && err.code === "TOPIC_NOT_FOUND") return undefined;
      throw err;
    });
    for (const c of status?.consumers ?? []) consumers.add(c);
  }
  return await statusCall(link)(topic, [...consumers].sort());
}

/** One line per thing owed, for the refusal. */
export function owedText(s: DrainStatus): string {
  const parts = s.groups.map((g) =>
    `${g.group}: ${g.unconsumed} unconsumed, ${g.inFlight} in flight, ${g.retry} to retry`
  );
  if (s.delayed > 0) parts.push(`${s.delayed} delayed or timer messages waiting on the broker`);
  if (s.openTransactions > 0) parts.push(`${s.openTransactions} open transactions`);
  return parts.join("; ");
}

function statusCall(link: GroupLink): DrainStatusApi["drainStatus"] {
  const api = link.client as Partial<DrainStatusApi>;
  if (typeof api.drainStatus !== "function") {
    throw new BrokerError(
      "BROKER_GROUP_NOT_DRAINED",
      `Cannot tell whether topic messages are owed on broker group ${link.name}: its link has no drainStatus; use force`,
    );
  }
  return (topic, groups) => api.drainStatus!.call(link.client, topic, groups);
}

/** A cron schedule publishing to `topic` from the group would tick on a read-only topic
 * (then, removed, on none): refused until they are deleted (re-created after the drain,
 * they go to an active group of the topic: docs/cluster.md, Drain and remove). */
export async function refuseWithSchedules(
  link: GroupLink,
  topic: string,
  what: "drain" | "remove",
): Promise<void> {
  const ids = (await link.client.listSchedules()).filter((s) => s.topic === topic)
    .map((s) => s.id);
  if (ids.length === 0) return;
  throw new BrokerError(
    "TOPIC_ROUTE_CONFLICT",
    `Cannot ${what} broker group ${link.name} of topic ${topic}: cron schedules of the topic live there (${
      ids.join(", ")
    }); delete them, ${what}, then create them again (they go to an active group)`,
    { schedules: ids },
  );
}
