// edgemq schedules list|pause|resume|delete, and edgemq scheduled cancel (one message)
import { defineCommand } from "citty";
import { common, context, guarded, isoTime, UsageError } from "../context.ts";

const list = defineCommand({
  meta: { name: "list", description: "Cron schedules" },
  args: { ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      ctx.rows(await ctx.mq.listSchedules(), [
        ["ID", (s) => s.id],
        ["TOPIC", (s) => s.topic],
        ["CRON", (s) => s.cron],
        ["TZ", (s) => s.timeZone],
        ["PAUSED", (s) => s.paused],
        ["LAST", (s) => isoTime(s.lastTickAt)],
        ["NEXT", (s) => isoTime(s.nextTickAt)],
      ]);
    }),
});

const id = { type: "positional", required: true, description: "Schedule id" } as const;

const pausing = (name: "pause" | "resume") =>
  defineCommand({
    meta: { name, description: `${name === "pause" ? "Pause" : "Resume"} a schedule` },
    args: { id, ...common },
    run: ({ args }) =>
      guarded(async () => {
        const ctx = context(args);
        const s = await ctx.mq.setSchedulePaused(args.id, name === "pause");
        ctx.out(s, () =>
          `${s.id}: ${s.paused ? "paused" : "running"}, next ${isoTime(s.nextTickAt)}`);
      }),
  });

const remove = defineCommand({
  meta: { name: "delete", description: "Delete a schedule" },
  args: { id, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      await ctx.mq.deleteSchedule(args.id);
      ctx.out({ deleted: args.id }, () => `deleted ${args.id}`);
    }),
});

export const schedules = defineCommand({
  meta: { name: "schedules", description: "Cron schedules: list, pause, resume, delete" },
  subCommands: { list, pause: pausing("pause"), resume: pausing("resume"), delete: remove },
});

const cancel = defineCommand({
  meta: { name: "cancel", description: "Cancel a delayed or timed message, by id or --key" },
  args: {
    topic: { type: "positional", required: true, description: "Topic" },
    id: { type: "positional", required: false, description: "Message id" },
    key: { type: "string", description: "Cancel every scheduled message with this key" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      if (!args.id === !args.key) throw new UsageError("Give a message id or --key, not both");
      const outcomes = args.key
        ? await ctx.mq.cancelScheduledByKey(args.topic, args.key)
        : [await ctx.mq.cancelScheduled(args.topic, args.id!)];
      ctx.rows(outcomes, [["MESSAGE ID", (o) => o.messageId], ["STATUS", (o) => o.status]]);
    }),
});

export const scheduled = defineCommand({
  meta: { name: "scheduled", description: "Scheduled (delayed or timed) messages: cancel" },
  subCommands: { cancel },
});
