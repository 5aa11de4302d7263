// edgemq topics route|add-group|drain-group|remove-group: a topic's broker groups through
// the cluster router (docs/cluster.md); a single broker answers the route of its own group.
import { defineCommand } from "citty";
import type { TopicRouteView } from "../../client/mod.ts";
import { common, context, guarded, UsageError } from "../context.ts";

type Ctx = ReturnType<typeof context>;

function show(ctx: Ctx, view: TopicRouteView) {
  ctx.out(view, () =>
    [
      `topic ${view.topic}: ${view.queues.length} queues over ${view.brokerGroups.length} groups`,
      ...view.brokerGroups.map((g) => {
        const queues = view.queues.filter((q) => q.brokerGroup === g.name);
        const ids = queues.length ? `${queues[0].queueId}-${queues.at(-1)!.queueId}` : "none";
        return `  ${g.name}  slot ${g.slot}  ${g.state}  epoch ${g.epoch}  queues ${ids}  ${g.url}`;
      }),
    ].join("\n"));
}

const topicArg = { type: "positional", required: true, description: "Topic" } as const;
const groupArg = { type: "positional", required: true, description: "Broker group" } as const;

const route = defineCommand({
  meta: { name: "route", description: "A topic's broker groups, slots and global queue ids" },
  args: { topic: topicArg, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      show(ctx, await ctx.mq.topicRoute(args.topic));
    }),
});

const addGroup = defineCommand({
  meta: { name: "add-group", description: "Spread a topic to one more broker group" },
  args: { topic: topicArg, group: groupArg, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      show(ctx, await ctx.mq.addTopicGroup(args.topic, args.group));
    }),
});

const drainGroup = defineCommand({
  meta: { name: "drain-group", description: "Stop writes to a topic on one broker group" },
  args: { topic: topicArg, group: groupArg, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      show(ctx, await ctx.mq.drainTopicGroup(args.topic, args.group));
    }),
});

const removeGroup = defineCommand({
  meta: { name: "remove-group", description: "Remove a drained broker group from a topic" },
  args: {
    topic: topicArg,
    group: groupArg,
    force: { type: "boolean", description: "Even if not drained: its messages are lost" },
    yes: { type: "boolean", description: "Do not ask (needed with --force)" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      if (args.force && !args.yes) throw new UsageError("--force loses messages: add --yes");
      const ctx = context(args);
      show(ctx, await ctx.mq.removeTopicGroup(args.topic, args.group, { force: args.force }));
    }),
});

export const routeCommands = {
  route,
  "add-group": addGroup,
  "drain-group": drainGroup,
  "remove-group": removeGroup,
};
