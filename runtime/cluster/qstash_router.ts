// The QStash front end's calls (QstashApi) over a cluster (docs/cluster.md "Front ends in a
// cluster"). QStash topics and subscriptions are ordinary ones (the router spreads them);
// what is per broker is the rest:
// - signing keys: every group signs the deliveries of its own queues, so all must hold the
//   same keys. The cluster's keys are those most live groups hold (a tie: the first group by
//   name among them); a group holding others is given them (setQstashSigningKeys) when the
//   keys are read or rotated, and at the first publish after the live groups change.
//   Rotation happens on one group holding the keys, then the new ones go to every group.
// - dead letters: each group dead-letters the messages of its queues, so listings merge
//   every group's (oldest first) and retry/delete go to every group (each acts on its own).
// - schedules: a cron schedule lives on one home group (admin_router.ts); asked of each.
// - settings and destination checks: the first live group that answers (every broker of a
//   cluster should run with the same settings).
// A group that refuses as not the leader (it failed over), or that a read cannot reach, is
// asked once more after the routes are read again (#on).
import type { BrokerClient, QstashApi, QstashOf } from "../protocol/core_api.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { QstashScheduleDetails, QstashSigningKeys } from "../protocol/qstash.ts";
import type { WireMessage } from "../protocol/types.ts";
import type { ClusterRouteSource, GroupLink } from "./route_source.ts";
import { isGroupFailure } from "./fault.ts";

type Groups = Pick<ClusterRouteSource, "groups"> & Partial<Pick<ClusterRouteSource, "invalidate">>;

export class ClusterQstash implements QstashApi {
  /** The live groups (name@epoch) the keys were last agreed over. */
  #synced = "";

  constructor(private readonly routes: Groups, private readonly of: QstashOf) {}

  async qstashSigningKeys(): Promise<QstashSigningKeys> {
    return (await this.#agree()).keys;
  }

  async rotateQstashSigningKeys(): Promise<QstashSigningKeys> {
    const { keys, links, held } = await this.#agree();
    const home = links.find((_, i) => same(held[i], keys))!;
    const rotated = await this.#on(home, WRITE, (q) => q.rotateQstashSigningKeys());
    await Promise.all(
      links.filter((l) => l !== home)
        .map((l) => this.#on(l, WRITE, (q) => q.setQstashSigningKeys(rotated))),
    );
    return rotated;
  }

  async setQstashSigningKeys(keys: QstashSigningKeys): Promise<QstashSigningKeys> {
    const links = await this.#live();
    const [set] = await Promise.all(
      links.map((l) => this.#on(l, WRITE, (q) => q.setQstashSigningKeys(keys))),
    );
    this.#synced = signature(links);
    return set;
  }

  async checkDestination(url: string): Promise<void> {
    await this.#anyGroup((q) => q.checkDestination(url));
  }

  qstashSettings() {
    return this.#anyGroup((q) => q.qstashSettings());
  }

  /** The first live group that answers (a group failure moves on; a refusal is the answer),
   * after agreeing on keys when the live groups changed. That sync is best effort here, so a
   * group that is down does not stop publishing: reading or rotating the keys retries it. */
  async #anyGroup<T>(f: (q: QstashApi) => Promise<T>): Promise<T> {
    const links = await this.#live();
    if (signature(links) !== this.#synced) {
      await this.#agree().catch(() => {});
      this.#synced = signature(links);
    }
    let failure: unknown;
    for (const link of links) {
      try {
        return await this.#on(link, READ, f);
      } catch (err) {
        if (!isGroupFailure(err)) throw err;
        failure ??= err;
      }
    }
    throw failure;
  }

  async listDeadLetters(group: string, max: number): Promise<WireMessage[]> {
    const all = await this.#each(READ, (q) => q.listDeadLetters(group, max));
    return all.flat().sort((a, b) => a.storeTimestamp - b.storeTimestamp).slice(0, max);
  }

  async retryDeadLetters(group: string, messageIds: string[]): Promise<string[]> {
    return (await this.#each(WRITE, (q) => q.retryDeadLetters(group, messageIds))).flat();
  }

  async deleteDeadLetters(group: string, messageIds: string[]): Promise<number> {
    const counts = await this.#each(WRITE, (q) => q.deleteDeadLetters(group, messageIds));
    return counts.reduce((s, n) => s + n, 0);
  }

  async qstashSchedule(id: string): Promise<QstashScheduleDetails> {
    let missing: unknown;
    for (const link of await this.#live()) {
      try {
        return await this.#on(link, READ, (q) => q.qstashSchedule(id));
      } catch (err) {
        if (!(err instanceof BrokerError && err.code === "SCHEDULE_NOT_FOUND")) throw err;
        missing ??= err;
      }
    }
    throw missing ?? new BrokerError("SCHEDULE_NOT_FOUND", `No schedule ${id}`);
  }

  /** Reads every live group's keys; those holding other keys than the cluster's get them. */
  /** Groups that cannot be reached are left out of the vote (and not synced: the next
   * call tries them again); none reachable is the first failure. */
  async #agree() {
    const all = await this.#live();
    const settled = await Promise.allSettled(
      all.map((l) => this.#on(l, READ, (q) => q.qstashSigningKeys())),
    );
    const links = all.filter((_, i) => settled[i].status === "fulfilled");
    const held = settled.flatMap((r) => r.status === "fulfilled" ? [r.value] : []);
    if (links.length === 0) throw (settled[0] as PromiseRejectedResult).reason;
    const votes = new Map<string, number>();
    for (const k of held) votes.set(key(k), (votes.get(key(k)) ?? 0) + 1);
    const most = Math.max(...votes.values());
    const keys = held.find((k) => votes.get(key(k)) === most)!;
    await Promise.all(
      links.filter((_, i) => !same(held[i], keys))
        .map((l) => this.#on(l, WRITE, (q) => q.setQstashSigningKeys(keys))),
    );
    this.#synced = links.length === all.length ? signature(all) : "";
    return { keys, links, held };
  }

  async #each<T>(read: boolean, f: (q: QstashApi) => Promise<T>): Promise<T[]> {
    return Promise.all((await this.#live()).map((l) => this.#on(l, read, f)));
  }

  /** `f` on one group. Refused as not the leader (the group failed over), or a read that
   * could not reach it: the routes are dropped and `f` runs once more on the group's link
   * read again. A write that could not reach it is not repeated (it may have happened). */
  async #on<T>(link: GroupLink, read: boolean, f: (q: QstashApi) => Promise<T>): Promise<T> {
    try {
      return await f(this.#qstash(link));
    } catch (err) {
      const code = err instanceof BrokerError ? err.code : undefined;
      if (code !== "NOT_LEADER" && !(read && code === "BROKER_UNAVAILABLE")) throw err;
      this.routes.invalidate?.();
      const again = (await this.routes.groups()).find((l) => l.name === link.name);
      if (again === undefined) throw err;
      return await f(this.#qstash(again));
    }
  }

  async #live(): Promise<GroupLink[]> {
    const links = await this.routes.groups();
    if (links.length === 0) {
      throw new BrokerError("BROKER_UNAVAILABLE", "No broker group is live in this cluster");
    }
    return links;
  }

  #qstash(link: GroupLink): QstashApi {
    return this.of(link.client as BrokerClient);
  }
}

/** createApp's `qstash` for a resolver whose broker is a ClusterClient (or anything with
 * `routes`): one ClusterQstash per client, over the groups' own QStash calls `of`. */
export function clusterQstashOf(of: QstashOf): QstashOf {
  const made = new WeakMap<object, ClusterQstash>();
  return (client) => {
    const routes = (client as unknown as { routes?: Groups }).routes;
    if (routes === undefined) return of(client);
    let q = made.get(client);
    if (q === undefined) made.set(client, q = new ClusterQstash(routes, of));
    return q;
  };
}

const READ = true;
const WRITE = false;
const key = (k: QstashSigningKeys) => `${k.current} ${k.next}`;
const same = (a: QstashSigningKeys, b: QstashSigningKeys) => key(a) === key(b);
const signature = (links: GroupLink[]) => links.map((l) => `${l.name}@${l.epoch}`).join(",");
