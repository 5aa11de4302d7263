// edgemq groups list|describe|create|reset-offsets
import process from "node:process";
import { defineCommand } from "citty";
import { common, context, guarded, isoTime, parseTime } from "../context.ts";

const list = defineCommand({
  meta: { name: "list", description: "List consumer groups with their total lag" },
  args: { ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const groups = await ctx.admin.listGroups();
      const rows = [];
      for (const [i, g] of groups.entries()) {
        ctx.progress(`reading group ${i + 1}/${groups.length}`);
        rows.push(await ctx.admin.groupProgress(g.group));
      }
      ctx.progress("");
      ctx.rows(rows, [
        ["GROUP", (p) => p.group.group],
        ["MODEL", (p) => p.group.messageModel],
        ["ORDERLY", (p) => p.group.orderly],
        ["TOPICS", (p) => p.topics.map((t) => t.topic).join(",") || "-"],
        ["LAG", (p) => p.totalLag],
        ["DLQ", (p) => p.dlqMessages],
      ]);
    }),
});

const describe = defineCommand({
  meta: {
    name: "describe",
    description: "A group's position and lag per queue (mqadmin consumerProgress)",
  },
  args: { group: { type: "positional", required: true, description: "Group" }, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const p = await ctx.admin.groupProgress(args.group);
      const rows = p.topics.flatMap((t) => t.queues.map((q) => ({ topic: t.topic, ...q })));
      if (ctx.json) return ctx.out(p, () => "");
      process.stdout.write(
        `group ${p.group.group} (${p.group.messageModel}${
          p.group.orderly ? ", orderly" : ""
        }): total lag ${p.totalLag}, DLQ ${p.dlqMessages}\n\n`,
      );
      ctx.rows(rows, [
        ["TOPIC", (r) => r.topic],
        ["QUEUE", (r) => r.queueId],
        ["MIN", (r) => r.minOffset],
        ["MAX", (r) => r.maxOffset],
        ["CONSUMER OFFSET", (r) => r.offset < 0 ? "-" : r.offset],
        ["LAG", (r) => r.lag],
      ]);
    }),
});

const create = defineCommand({
  meta: { name: "create", description: "Create a consumer group (defaults)" },
  args: {
    group: { type: "positional", required: true, description: "Group" },
    orderly: { type: "boolean", description: "Ordered consumption" },
    broadcasting: { type: "boolean", description: "BROADCASTING message model" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const settings: Record<string, unknown> = {};
      if (args.orderly) settings.orderly = true;
      if (args.broadcasting) settings.messageModel = "BROADCASTING";
      const g = await ctx.mq.upsertGroup(args.group, settings);
      ctx.out(g, () => `group ${g.group} ready (${g.messageModel})`);
    }),
});

const reset = defineCommand({
  meta: { name: "reset-offsets", description: "Move a group's offsets on a topic to a time" },
  args: {
    group: { type: "positional", required: true, description: "Group" },
    topic: { type: "string", required: true, description: "Topic" },
    time: {
      type: "string",
      required: true,
      description: "Epoch ms, ISO 8601, or relative: -15m, -2h, -1d",
    },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const at = parseTime(args.time);
      const r = await ctx.mq.resetOffsetsByTime(args.group, args.topic, at);
      if (ctx.json) return ctx.out(r, () => "");
      process.stdout.write(
        `reset ${r.group} on ${r.topic} to ${isoTime(at)}: lag now ${r.totalLag}\n`,
      );
      ctx.rows(r.queues, [["QUEUE", (q) => q.queueId], ["OFFSET", (q) => q.offset], ["LAG", (q) =>
        q.lag]]);
    }),
});

export default defineCommand({
  meta: {
    name: "groups",
    description: "Consumer groups: list, describe (lag per queue), create, reset offsets",
  },
  subCommands: { list, describe, create, "reset-offsets": reset },
});
