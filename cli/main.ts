#!/usr/bin/env -S deno run -A
// The edgemq admin CLI: `deno run -A cli/main.ts …` or `bun run cli/main.ts …` (package.json
// "bin" names it edgemq). Noun-verb commands over the SDK client and the operations routes;
// human tables by default, --json for scripts; --url/--token or EDGEMQ_URL/EDGEMQ_TOKEN.
// docs/cli.md has every command.
import { defineCommand, runMain } from "citty";

const main = defineCommand({
  meta: { name: "edgemq", version: "0.1.0", description: "Administer an edgemq broker" },
  subCommands: {
    topics: () => import("./commands/topics.ts").then((m) => m.default),
    groups: () => import("./commands/groups.ts").then((m) => m.default),
    messages: () => import("./commands/messages.ts").then((m) => m.default),
    dlq: () => import("./commands/dlq.ts").then((m) => m.default),
    webhooks: () => import("./commands/webhooks.ts").then((m) => m.default),
    schedules: () => import("./commands/schedules.ts").then((m) => m.schedules),
    scheduled: () => import("./commands/schedules.ts").then((m) => m.scheduled),
    cluster: () => import("./commands/cluster.ts").then((m) => m.default),
    dev: () => import("./commands/dev.ts").then((m) => m.default),
  },
});

await runMain(main);
