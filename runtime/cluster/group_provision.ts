// Consumer groups on broker groups that joined a topic later (issue #26): a broker group
// that never heard of consumer group `group` answers GROUP_NOT_FOUND; the router then
// copies the settings another live group holds and asks again, so receive, heartbeats,
// offsets, locks and assignment keep working through an expansion.
//
// The copy runs with the brokers' admin key whatever the caller may do (a consume-only key
// cannot upsert a group): it only copies settings a group already holds, never new ones,
// so the caller gains no right it did not have on the cluster as a whole.
import { BrokerError } from "../protocol/errors.ts";
import type { GroupSettings, SignalSource } from "../protocol/types.ts";
import type { ClusterContext } from "./context.ts";
import type { GroupLink } from "./route_source.ts";

/** As ClusterContext.call(), for a call about consumer group `group`; without a live
 * group holding it, GROUP_NOT_FOUND stands. */
export async function forGroup<T>(
  ctx: ClusterContext,
  link: GroupLink,
  topic: string | undefined,
  group: string,
  f: (client: GroupLink["client"]) => Promise<T>,
  signal?: SignalSource,
): Promise<T> {
  try {
    return await ctx.call(link, topic, f, signal);
  } catch (err) {
    if (!(err instanceof BrokerError && err.code === "GROUP_NOT_FOUND")) throw err;
    const settings = await groupSettings(ctx, group, link.name);
    if (settings === undefined) throw err;
    await ctx.call(link, topic, (c) => c.upsertGroup(group, settings));
    return ctx.call(link, topic, f, signal);
  }
}

async function groupSettings(
  ctx: ClusterContext,
  group: string,
  missingAt: string,
): Promise<GroupSettings | undefined> {
  for (const other of await ctx.groups()) {
    if (other.name === missingAt) continue;
    try {
      const { group: _name, ...settings } = await other.client.getGroup(group);
      return settings;
    } catch {
      // not there either (or unreachable): ask the next
    }
  }
  return undefined;
}
