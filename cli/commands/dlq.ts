// edgemq dlq list|redrive|purge
import { defineCommand } from "citty";
import { common, context, guarded, isoTime, UsageError } from "../context.ts";
import { preview } from "./messages.ts";

const group = { type: "positional", required: true, description: "Consumer group" } as const;

const list = defineCommand({
  meta: { name: "list", description: "Dead letters of a group" },
  args: {
    group,
    max: { type: "string", description: "At most this many", default: "32" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const r = await ctx.mq.listDlq(args.group, { max: Number(args.max) });
      ctx.rows(r.messages, [
        ["MESSAGE ID", (m) => m.messageId],
        ["TOPIC", (m) => m.topic],
        ["STORED", (m) => isoTime(m.storeTimestamp)],
        ["RECONSUMED", (m) => m.reconsumeTimes],
        ["BODY", (m) => preview(m)],
      ], r);
    }),
});

const redrive = defineCommand({
  meta: { name: "redrive", description: "Send dead letters back to their topics (all, or --ids)" },
  args: { group, ids: { type: "string", description: "Comma-separated message ids" }, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      ctx.progress(
        `redriving ${args.ids ? "the listed letters" : "every dead letter"} of ${args.group}…`,
      );
      const r = await ctx.mq.redriveDlq(args.group, args.ids?.split(",").filter(Boolean));
      ctx.progress("");
      ctx.out(r, () => `redrove ${r.redriven} messages of ${args.group}`);
    }),
});

const purge = defineCommand({
  meta: { name: "purge", description: "Forget every dead letter of a group" },
  args: { group, yes: { type: "boolean", description: "Do not ask" }, ...common },
  run: ({ args }) =>
    guarded(async () => {
      if (!args.yes) throw new UsageError(`Purging the DLQ of ${args.group} needs --yes`);
      const ctx = context(args);
      const r = await ctx.mq.purgeDlq(args.group);
      ctx.out(r, () => `purged ${r.purged} messages of ${args.group}`);
    }),
});

export default defineCommand({
  meta: { name: "dlq", description: "Dead-letter queues: list, redrive, purge" },
  subCommands: { list, redrive, purge },
});
