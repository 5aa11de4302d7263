// Entry for Deno Deploy (`deno deploy`): the stateless functions only. Deploy has no
// durable file system and stops instances at any time, so the broker runs elsewhere and
// registers itself in the same KV database this app opens with `Deno.openKv()` (attach
// the production KV database to the app; brokers outside Deploy reach it by its KV Connect
// URL and an access token). Settings come from the app's environment variables:
//   MQ_API_KEYS      JSON list of API keys (required on Deploy: an open API is refused)
//   MQ_BROKER_TOKEN  the API key this app presents to brokers (an admin key there)
import { createApp } from "./app.ts";
import { KvRouteResolver } from "./resolver.ts";
import { readRoutes, type RouteKey, type RouteKv } from "../runtime/protocol/routes.ts";
import { functionsSettingsFromEnv } from "../runtime/protocol/limits.ts";

// deno-lint-ignore no-explicit-any
const Deno = (globalThis as any).Deno;
const env = (name: string, fallback = "") => Deno.env.get(name) ?? fallback;

const kv = await Deno.openKv();
const routeKv: RouteKv = {
  async list(prefix) {
    const out: { key: RouteKey; value: Uint8Array }[] = [];
    for await (const e of kv.list({ prefix })) {
      out.push({ key: e.key as RouteKey, value: e.value as Uint8Array });
    }
    return out;
  },
  async set(key, value) {
    await kv.set(key, value);
  },
  async delete(key) {
    await kv.delete(key);
  },
};
const apiKeys = JSON.parse(env("MQ_API_KEYS", "[]"));
if (!Array.isArray(apiKeys) || apiKeys.length === 0) {
  throw new Error("Set MQ_API_KEYS: the functions refuse to run open on Deploy");
}
// The limits and route timings: the broker's rows, so unset variables mean the brokers'
// own defaults; a bad value throws a ConfigError naming it.
const { limits, routeExpiryMs, routeCacheMs } = functionsSettingsFromEnv(Deno.env.toObject());
const log = (level: string, msg: string, fields?: Record<string, unknown>) =>
  console.log(JSON.stringify({ level, msg, ...fields }));
const app = await createApp({
  broker: new KvRouteResolver(
    {
      brokers: async () =>
        (await readRoutes(routeKv, Date.now(), routeExpiryMs)).map((r) => r.address),
    },
    { token: env("MQ_BROKER_TOKEN") || undefined, cacheMs: routeCacheMs, nowMs: () => Date.now() },
  ),
  apiKeys,
  limits,
  log,
});
Deno.serve(app.fetch);
