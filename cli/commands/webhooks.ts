// edgemq webhooks list|pause|resume|deliveries
import { defineCommand } from "citty";
import { common, context, guarded, isoTime } from "../context.ts";

const list = defineCommand({
  meta: { name: "list", description: "Webhook subscriptions" },
  args: { ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const subs = await ctx.mq.listSubscriptions();
      ctx.rows(subs, [
        ["GROUP", (s) => s.group],
        ["TOPIC", (s) => s.topic],
        ["URL", (s) => s.url],
        ["STATUS", (s) => s.status],
        ["DELIVERED", (s) => s.stats.delivered],
        ["FAILED", (s) => s.stats.failedAttempts],
        ["DLQ", (s) => s.stats.deadLettered],
        ["LAG", (s) => s.stats.lag],
      ]);
    }),
});

const pausing = (name: "pause" | "resume") =>
  defineCommand({
    meta: { name, description: `${name === "pause" ? "Pause" : "Resume"} a subscription` },
    args: {
      group: { type: "positional", required: true, description: "Subscription group" },
      ...common,
    },
    run: ({ args }) =>
      guarded(async () => {
        const ctx = context(args);
        const s = await ctx.mq.setSubscriptionPaused(args.group, name === "pause");
        ctx.out(s, () => `${s.group}: ${s.status}`);
      }),
  });

const deliveries = defineCommand({
  meta: { name: "deliveries", description: "A subscription's recent delivery attempts" },
  args: {
    group: { type: "positional", required: true, description: "Subscription group" },
    failed: { type: "boolean", description: "Only attempts that did not deliver" },
    limit: { type: "string", description: "At most this many", default: "50" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const all = await ctx.mq.listDeliveries(args.group, { limit: Number(args.limit) });
      const shown = args.failed ? all.filter((a) => a.outcome !== "delivered") : all;
      ctx.rows(shown, [
        ["AT", (a) => isoTime(a.at)],
        ["MESSAGE ID", (a) => a.messageId],
        ["ATTEMPT", (a) => a.attempt],
        ["STATUS", (a) => a.status],
        ["OUTCOME", (a) => a.outcome],
        ["MS", (a) => a.latencyMs],
        ["ERROR", (a) => a.error],
      ]);
    }),
});

export default defineCommand({
  meta: { name: "webhooks", description: "Webhook subscriptions: list, pause, resume, deliveries" },
  subCommands: { list, pause: pausing("pause"), resume: pausing("resume"), deliveries },
});
