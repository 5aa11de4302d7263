// A drain moves the topic's cron schedules off the draining group (docs/cluster.md, Drain):
// a schedule there would tick into a read-only topic, and be lost with the group. Each goes
// to the group a new schedule of the topic would go to (the first other active group by
// name, as admin_router.ts's createSchedule picks its home), keeping its id, creation time
// and last tick: paused on the draining group, exported, imported on the heir (paused if it
// was), then deleted. A tick due in the few milliseconds between fires on the heir; a move
// that fails half way resumes the schedule where it was, and a drain run again finishes it
// (an import of a schedule already there is answered as it is).
import { BrokerError } from "../protocol/errors.ts";
import type { ScheduleMoveApi } from "../protocol/core_api.ts";
import type { GroupLink } from "./route_source.ts";

/** Moves every schedule of `topic` from `from` to `to`; returns their ids. */
export async function moveSchedules(
  from: GroupLink,
  to: GroupLink,
  topic: string,
): Promise<string[]> {
  const schedules = (await from.client.listSchedules()).filter((s) => s.topic === topic);
  if (schedules.length === 0) return [];
  const out = moveApi(from);
  const into = moveApi(to);
  for (const s of schedules) {
    if (!s.paused) await from.client.setSchedulePaused(s.id, true);
    try {
      const whole = await out.exportSchedule(s.id);
      await into.importSchedule({ ...whole, paused: s.paused });
    } catch (err) {
      if (!s.paused) await from.client.setSchedulePaused(s.id, false).catch(() => {});
      throw err;
    }
    await from.client.deleteSchedule(s.id);
  }
  return schedules.map((s) => s.id);
}

function moveApi(link: GroupLink): ScheduleMoveApi {
  const m = link.client as Partial<ScheduleMoveApi>;
  if (typeof m.exportSchedule !== "function" || typeof m.importSchedule !== "function") {
    throw new BrokerError(
      "TOPIC_ROUTE_CONFLICT",
      `Cannot move cron schedules with broker group ${link.name}: its link cannot export or import them; delete them, drain, then create them again`,
    );
  }
  return {
    exportSchedule: (id) => m.exportSchedule!.call(link.client, id),
    importSchedule: (s) => m.importSchedule!.call(link.client, s),
  };
}
