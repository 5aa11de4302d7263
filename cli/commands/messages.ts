// edgemq messages get|find|send|tail
import process from "node:process";
import { defineCommand } from "citty";
import type { WireMessage } from "../../runtime/protocol/types.ts";
import { common, context, type Ctx, guarded, isoTime, parseTime, UsageError } from "../context.ts";

const messageColumns: Array<[string, (m: WireMessage) => unknown]> = [
  ["MESSAGE ID", (m) => m.messageId],
  ["QUEUE", (m) => m.queueId],
  ["OFFSET", (m) => m.queueOffset],
  ["STORED", (m) => isoTime(m.storeTimestamp)],
  ["TAG", (m) => m.tag],
  ["KEYS", (m) => m.keys?.join(" ")],
  ["BODY", (m) => preview(m)],
];

export function preview(m: WireMessage, n = 60): string {
  const text = m.bodyEncoding === "utf8" ? m.body : `<${m.body.length * 3 / 4 | 0} bytes>`;
  return text.length > n ? text.slice(0, n - 1) + "…" : text.replaceAll("\n", " ");
}

const get = defineCommand({
  meta: { name: "get", description: "A message by its id" },
  args: {
    id: { type: "positional", required: true, description: "Message id" },
    topic: { type: "string", description: "Topic (faster lookup)" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const m = await ctx.mq.getMessageById(args.id, args.topic);
      ctx.out(m, () =>
        [
          `id       ${m.messageId}`,
          `topic    ${m.topic} queue ${m.queueId} offset ${m.queueOffset}`,
          `stored   ${isoTime(m.storeTimestamp)} (born ${isoTime(m.bornTimestamp)})`,
          `tag      ${m.tag ?? "-"}   keys ${
            m.keys?.join(" ") || "-"
          }   reconsumed ${m.reconsumeTimes}`,
          ...Object.entries(m.properties).map(([k, v]) => `prop     ${k}=${v}`),
          "",
          m.bodyEncoding === "utf8" ? m.body : `(base64) ${m.body}`,
        ].join("\n"));
    }),
});

const find = defineCommand({
  meta: { name: "find", description: "Messages of a topic by key and/or store time" },
  args: {
    topic: { type: "positional", required: true, description: "Topic" },
    key: { type: "string", description: "Message key" },
    since: { type: "string", description: "From (epoch ms, ISO 8601, -15m/-2h/-1d)" },
    until: { type: "string", description: "To (same forms); default now" },
    max: { type: "string", description: "At most this many", default: "32" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      if (args.key === undefined && args.since === undefined) {
        throw new UsageError("Give --key, --since, or both");
      }
      const found = await ctx.mq.findMessages(args.topic, {
        key: args.key,
        beginTimestamp: args.since === undefined ? undefined : parseTime(args.since),
        endTimestamp: args.until === undefined ? undefined : parseTime(args.until),
        maxNum: Number(args.max),
      });
      ctx.rows(found, messageColumns);
    }),
});

const send = defineCommand({
  meta: { name: "send", description: "Produce one message (text body)" },
  args: {
    topic: { type: "positional", required: true, description: "Topic" },
    body: { type: "positional", required: true, description: "Body text" },
    tag: { type: "string", description: "Tag" },
    key: { type: "string", description: "Key" },
    delay: { type: "string", description: "Deliver after this many ms" },
    ...common,
  },
  run: ({ args }) =>
    guarded(async () => {
      const ctx = context(args);
      const r = await ctx.mq.produce(args.topic, {
        body: args.body,
        tag: args.tag,
        keys: args.key ? [args.key] : undefined,
        delayMs: args.delay === undefined ? undefined : Number(args.delay),
        contentType: "text/plain",
      });
      ctx.out(r, () => `${r.messageId} -> ${r.topic}:${r.queueId}@${r.queueOffset}`);
    }),
});

const tail = defineCommand({
  meta: { name: "tail", description: "The newest messages of a topic; -f follows new ones" },
  args: {
    topic: { type: "positional", required: true, description: "Topic" },
    follow: { type: "boolean", alias: ["f"], description: "Keep printing new messages" },
    lines: {
      type: "string",
      alias: ["n"],
      description: "Messages per queue to show first",
      default: "10",
    },
    ...common,
  },
  run: ({ args }) =>
    guarded(() => tailTopic(context(args), args.topic, Number(args.lines), !!args.follow)),
});

async function tailTopic(ctx: Ctx, topic: string, lines: number, follow: boolean) {
  const config = await ctx.mq.getTopic(topic);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const print = (m: WireMessage) =>
    process.stdout.write(
      ctx.json
        ? JSON.stringify(m) + "\n"
        : `${isoTime(m.storeTimestamp)} ${m.topic}:${m.queueId}@${m.queueOffset} ${m.tag ?? "-"} ${
          preview(m, 200)
        }\n`,
    );
  const queue = async (q: number) => {
    const first = await ctx.mq.pull(topic, q, { offset: 0, max: 1 });
    let offset = Math.max(first.minOffset, first.maxOffset - lines);
    while (!stop.signal.aborted) {
      const r = await ctx.mq.pull(
        topic,
        q,
        { offset, max: 64, waitMs: follow ? 10_000 : 0 },
        stop.signal,
      )
        .catch((err) => {
          if (stop.signal.aborted) return undefined;
          throw err;
        });
      if (!r) return;
      r.messages.forEach(print);
      offset = r.nextOffset;
      if (!follow && offset >= r.maxOffset) return;
    }
  };
  try {
    await Promise.all([...Array(config.readQueueNums).keys()].map(queue));
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

export default defineCommand({
  meta: { name: "messages", description: "Messages: get by id, find by key/time, send, tail -f" },
  subCommands: { get, find, send, tail },
});
