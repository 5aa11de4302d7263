// edgemq cluster: the broker group's nodes, roles, epochs and replica lag; and health.
import process from "node:process";
import { defineCommand } from "citty";
import { common, context, guarded } from "../context.ts";

export default defineCommand({
  meta: { name: "cluster", description: "Broker groups: roles, epochs, offsets, replica lag" },
  args: { ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const view = await ctx.admin.clusterView();
      const health = await ctx.mq.health();
      if (ctx.json) return ctx.out({ ...view, health }, () => "");
      process.stdout.write(
        `${view.mode} · ${health.brokerName} · ${health.status} · ${health.runtime} · ${health.flushDiskType}\n\n`,
      );
      ctx.rows(view.nodes, [
        ["GROUP", (n) => n.brokerGroup],
        ["ID", (n) => n.brokerId],
        ["ROLE", (n) => n.role],
        ["EPOCH", (n) => n.epoch],
        ["MAX OFFSET", (n) => n.maxOffset],
        ["IN SYNC", (n) => n.inSync],
        ["LAG BYTES", (n) => n.lagBytes],
        ["ADDRESS", (n) => n.address],
      ]);
    }),
});
