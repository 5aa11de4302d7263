// edgemq topics list|get|create|update|delete
import { defineCommand } from "citty";
import { common, context, guarded, isoTime, UsageError } from "../context.ts";
import { routeCommands } from "./topic_route.ts";

const list = defineCommand({
  meta: { name: "list", description: "List topics with their statistics" },
  args: { ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const topics = await ctx.mq.listTopics();
      const stats = [];
      for (const [i, t] of topics.entries()) {
        ctx.progress(`reading topic ${i + 1}/${topics.length}`);
        stats.push({ ...t, stats: await ctx.admin.topicStats(t.name) });
      }
      ctx.progress("");
      ctx.rows(stats, [
        ["TOPIC", (t) => t.name],
        ["QUEUES", (t) => `${t.readQueueNums}/${t.writeQueueNums}`],
        ["PERM", (t) => perm(t.perm)],
        ["ORDER", (t) => t.order],
        ["MESSAGES", (t) => t.stats.messages],
        ["WRITTEN", (t) => t.stats.messagesWritten],
        ["MSG/S", (t) => t.stats.produceRatePerSec],
      ]);
    }),
});

const get = defineCommand({
  meta: { name: "get", description: "A topic's settings and per-queue offsets" },
  args: { topic: { type: "positional", required: true, description: "Topic" }, ...common },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const config = await ctx.mq.getTopic(args.topic);
      const stats = await ctx.admin.topicStats(args.topic);
      ctx.out({ ...config, stats }, () =>
        [
          `topic ${config.name}: ${config.readQueueNums} read / ${config.writeQueueNums} write queues, perm ${
            perm(config.perm)
          }${config.order ? ", ordered" : ""}`,
          `${stats.messages} messages kept, ${stats.messagesWritten} written, ${stats.bytesProducedSinceStart} bytes produced since start, ${stats.produceRatePerSec} msg/s`,
          "",
          tableOf(stats.queues),
        ].join("\n"));
    }),
});

function tableOf(
  queues: { queueId: number; minOffset: number; maxOffset: number; lastStoreTimestamp: number }[],
) {
  const pad = (s: unknown, n: number) => String(s).padStart(n);
  return [
    "QUEUE       MIN       MAX  LAST STORED",
    ...queues.map((q) =>
      `${pad(q.queueId, 5)}  ${pad(q.minOffset, 8)}  ${pad(q.maxOffset, 8)}  ${
        isoTime(q.lastStoreTimestamp)
      }`
    ),
  ].join("\n");
}

const queueArgs = {
  queues: { type: "string", description: "Read and write queues" },
  "read-queues": { type: "string", description: "Read queues" },
  "write-queues": { type: "string", description: "Write queues" },
  perm: { type: "string", description: "rw, r, w or a number (READ 4 | WRITE 2)" },
  order: { type: "boolean", description: "Ordered topic" },
  groups: { type: "string", description: "Cluster: broker groups, comma-separated" },
  "group-count": { type: "string", description: "Cluster: spread over this many groups" },
} as const;

function upsertOf(args: Record<string, unknown>) {
  const int = (name: string) => {
    const v = args[name] as string | undefined;
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
    return Number(v);
  };
  const update: Record<string, unknown> = {};
  const both = int("queues");
  update.readQueueNums = int("read-queues") ?? both;
  update.writeQueueNums = int("write-queues") ?? both;
  if (args.perm !== undefined) update.perm = parsePerm(String(args.perm));
  if (args.order !== undefined) update.order = args.order;
  if (args.groups !== undefined) update.brokerGroups = String(args.groups).split(",");
  update.brokerGroupCount = int("group-count");
  return Object.fromEntries(Object.entries(update).filter(([, v]) => v !== undefined));
}

const upsert = (name: "create" | "update") =>
  defineCommand({
    meta: { name, description: name === "create" ? "Create a topic" : "Change a topic's settings" },
    args: {
      topic: { type: "positional", required: true, description: "Topic" },
      ...queueArgs,
      ...common,
    },
    run: ({ args }) =>
      guarded(async () => {
        const ctx = context(args);
        const t = await ctx.mq.upsertTopic(args.topic, upsertOf(args));
        ctx.out(t, () =>
          `${
            name === "create" ? "created" : "updated"
          } ${t.name}: ${t.readQueueNums}/${t.writeQueueNums} queues, perm ${perm(t.perm)}`);
      }),
  });

const remove = defineCommand({
  meta: { name: "delete", description: "Delete a topic (its messages age out)" },
  args: {
    topic: { type: "positional", required: true, description: "Topic" },
    yes: { type: "boolean", description: "Do not ask" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      if (!args.yes) throw new UsageError(`Deleting ${args.topic} needs --yes`);
      const ctx = context(args);
      await ctx.mq.deleteTopic(args.topic);
      ctx.out({ deleted: args.topic }, () => `deleted ${args.topic}`);
    }),
});

export function perm(p: number): string {
  return `${p & 4 ? "r" : "-"}${p & 2 ? "w" : "-"}`;
}

function parsePerm(text: string): number {
  if (/^\d+$/.test(text)) return Number(text);
  if (!/^[rw]+$/.test(text)) throw new UsageError("--perm must be rw, r, w or a number");
  return (text.includes("r") ? 4 : 0) | (text.includes("w") ? 2 : 0);
}

export default defineCommand({
  meta: {
    name: "topics",
    description: "Topics: list with stats, get, create, update, delete, route over groups",
  },
  subCommands: {
    list,
    get,
    create: upsert("create"),
    update: upsert("update"),
    delete: remove,
    ...routeCommands,
  },
});
