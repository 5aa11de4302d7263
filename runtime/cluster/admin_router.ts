// Consumer-group settings, dead-letter queues and cron schedules across broker groups
// (issue #26). Group settings are broadcast (every group serves the group's queues) and
// read from the first live group; each group keeps its own %DLQ%, so DLQ calls fan out
// and add up.
import type {
  CronScheduleInput,
  CronScheduleView,
  GroupSettings,
  GroupView,
  PullResult,
} from "../protocol/types.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { ClusterContext } from "./context.ts";
import { broadcast, fanOut, firstFound, firstLive } from "./fanout.ts";
import { byName } from "./queue_map.ts";

export class AdminRouter {
  constructor(private readonly ctx: ClusterContext) {}

  async upsertGroup(group: string, settings?: GroupSettings): Promise<GroupView> {
    const answers = await broadcast(
      this.ctx,
      `settings of consumer group ${group}`,
      await this.ctx.groups(),
      undefined,
      (c) => c.upsertGroup(group, settings),
    );
    return answers[0].value;
  }

  async getGroup(group: string): Promise<GroupView> {
    const link = firstLive(await this.ctx.groups());
    return this.ctx.call(link, undefined, (c) => c.getGroup(group));
  }

  /** Every group's page from `offset`, merged by store time. Paging is per group: the
   * next offset is the least of the groups' next offsets, so a page may repeat messages
   * of a group that is ahead but never skips one. */
  async listDlq(group: string, options?: { offset?: number; max?: number }): Promise<PullResult> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.listDlq(group, options),
      ["GROUP_NOT_FOUND"],
    );
    const pages = answers.map((a) => a.value);
    const found = pages.filter((p) => p.messages.length > 0);
    return {
      status: found.length > 0 ? "FOUND" : pages[0].status,
      messages: found.flatMap((p) => p.messages).sort((a, b) =>
        a.storeTimestamp - b.storeTimestamp
      ),
      nextOffset: Math.min(...(found.length > 0 ? found : pages).map((p) => p.nextOffset)),
      minOffset: Math.min(...pages.map((p) => p.minOffset)),
      maxOffset: Math.max(...pages.map((p) => p.maxOffset)),
    };
  }

  async redriveDlq(group: string, messageIds?: string[]): Promise<{ redriven: number }> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.redriveDlq(group, messageIds),
      ["GROUP_NOT_FOUND"],
    );
    return { redriven: answers.reduce((n, a) => n + a.value.redriven, 0) };
  }

  async purgeDlq(group: string): Promise<{ purged: number }> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.purgeDlq(group),
      ["GROUP_NOT_FOUND"],
    );
    return { purged: answers.reduce((n, a) => n + a.value.purged, 0) };
  }

  /**
   * A cron schedule lives on ONE group, its home: the first active group by name of the
   * schedule's topic. One copy, so each tick is published once (a broadcast would publish
   * it once per group); a group of the topic, so the ticks land in queues the route lists
   * and every consumer of the topic sees them. Lookups by id ask every live group, so a
   * schedule is found wherever it was created.
   */
  async createSchedule(input: CronScheduleInput): Promise<CronScheduleView> {
    const queues = await this.ctx.queues(
      input.topic,
      this.ctx.settings.clusterAutoCreateTopicEnable,
    );
    const home = byName(queues.all().filter((g) => g.state === "active").map((g) => g.link))[0];
    if (home === undefined) {
      throw new BrokerError(
        "BROKER_UNAVAILABLE",
        `Cannot create a schedule for ${input.topic}: none of its broker groups is live and active`,
      );
    }
    return this.ctx.call(home, input.topic, (c) => c.createSchedule(input));
  }

  async listSchedules(): Promise<CronScheduleView[]> {
    const answers = await fanOut(
      this.ctx,
      await this.ctx.groups(),
      undefined,
      (c) => c.listSchedules(),
    );
    return answers.flatMap((a) => a.value).sort((a, b) => a.id < b.id ? -1 : 1);
  }

  async getSchedule(id: string): Promise<CronScheduleView> {
    return (await this.#scheduleCall((c) => c.getSchedule(id))).value;
  }

  async setSchedulePaused(id: string, paused: boolean): Promise<CronScheduleView> {
    return (await this.#scheduleCall((c) => c.setSchedulePaused(id, paused))).value;
  }

  async deleteSchedule(id: string): Promise<void> {
    await this.#scheduleCall((c) => c.deleteSchedule(id));
  }

  async #scheduleCall<T>(
    f: Parameters<typeof firstFound<T>>[4],
  ) {
    return firstFound(this.ctx, await this.ctx.groups(), undefined, "SCHEDULE_NOT_FOUND", f);
  }
}
