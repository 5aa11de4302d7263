// /v2/batch: a JSON array of {destination, headers, body, queue}. Every entry is checked
// before any is published, so a bad entry answers 400 and stores nothing; the answer is
// one result per entry (an array for a URL group).
import type { Hono } from "hono";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { readBody } from "../body.ts";
import type { Env } from "../routes/route.ts";
import { parseQstashHeaders, type QstashOptions } from "./headers.ts";
import type { Plumbing, QstashDeps } from "./plumbing.ts";
import { checkPublish, publishOne } from "./publish.ts";

interface Entry {
  destination: string;
  options: QstashOptions;
  body: Uint8Array;
  queue?: string;
}

export function batchRoutes(app: Hono<Env>, deps: QstashDeps, plumbing: Plumbing) {
  app.post("/batch", async (c) => {
    const s = await plumbing.settings();
    const raw = await readBody(c.req.raw, deps.limits.batchBodyBytesMax, deps.deadlines);
    let items: unknown;
    try {
      items = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      throw new BrokerError("INVALID_JSON", "A batch is a JSON array of messages");
    }
    if (!Array.isArray(items) || items.length > deps.limits.batchItemsMax) {
      throw new BrokerError(
        "INVALID_PARAMETER",
        `A batch is a JSON array of at most ${deps.limits.batchItemsMax} messages`,
      );
    }
    const entries: Entry[] = [];
    for (const item of items as Record<string, unknown>[]) {
      if (typeof item?.destination !== "string") {
        throw new BrokerError("INVALID_PARAMETER", "Every batch entry needs a destination");
      }
      const headers = Object.entries((item.headers ?? {}) as Record<string, string>);
      const entry: Entry = {
        destination: item.destination,
        options: parseQstashHeaders(headers, "publish", s.retriesMax),
        body: new TextEncoder().encode(typeof item.body === "string" ? item.body : ""),
        queue: typeof item.queue === "string" ? item.queue : undefined,
      };
      await checkPublish(
        deps,
        plumbing,
        entry.destination,
        entry.options,
        entry.body,
        entry.queue,
        (topic) => deps.allow(c, "publish", { topic }),
      );
      entries.push(entry);
    }
    const results = [];
    for (const e of entries) {
      results.push(
        await publishOne(c, deps, plumbing, e.destination, e.options, e.body, e.queue),
      );
    }
    return c.json(results);
  });
}
