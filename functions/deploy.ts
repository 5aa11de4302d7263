// Entry for Deno Deploy (`deno deploy`): the stateless functions only. Deploy has no
// durable file system and stops instances at any time, so the broker runs elsewhere and
// registers itself in the same KV database this app opens with `Deno.openKv()` (attach
// the production KV database to the app; brokers outside Deploy reach it by its KV Connect
// URL and an access token). Settings come from the app's environment variables:
//   MQ_API_KEYS      JSON list of API keys (required on Deploy: an open API is refused)
//   MQ_BROKER_TOKEN  the API key this app presents to brokers (an admin key there)
import process from "node:process";
import { createApp } from "./app.ts";
import { KvRouteResolver } from "./resolver.ts";
import { brokerLink } from "./broker_link.ts";
import { readRoutes } from "../runtime/protocol/routes.ts";
import { denoPlatform } from "../runtime/platform/deno.ts";
import { functionsSettingsFromEnv } from "../runtime/protocol/limits.ts";

/** Deno.serve's defaults; Deploy picks the address itself. */
const HOSTNAME = "0.0.0.0";
const PORT_DEFAULT = "8000";

// Deploy runs Deno only, so this entry needs no pick.
const platform = denoPlatform();
const nowMs = platform.clock.wallMs;
const env = (name: string, fallback = "") => process.env[name] ?? fallback;

const kv = await platform.openKv();
const apiKeys = JSON.parse(env("MQ_API_KEYS", "[]"));
if (!Array.isArray(apiKeys) || apiKeys.length === 0) {
  throw new Error("Set MQ_API_KEYS: the functions refuse to run open on Deploy");
}
// The limits and route timings: the broker's rows, so unset variables mean the brokers'
// own defaults; a bad value throws a ConfigError naming it.
const { limits, routeExpiryMs, routeCacheMs, requestBodyBytesBackstop, corsOrigins } =
  functionsSettingsFromEnv(process.env);
const log = (level: string, msg: string, fields?: Record<string, unknown>) =>
  console.log(JSON.stringify({ level, msg, ...fields }));
// The SDK client with the operations, transaction and QStash calls (so /v2 is served here too).
const brokers = brokerLink(env("MQ_BROKER_TOKEN") || undefined);
const app = await createApp({
  broker: new KvRouteResolver(
    {
      brokers: async () => (await readRoutes(kv, nowMs(), routeExpiryMs)).map((r) => r.address),
    },
    {
      connect: brokers.connect,
      cacheMs: routeCacheMs,
      nowMs,
    },
  ),
  apiKeys,
  limits,
  corsOrigins,
  log,
  qstash: brokers.qstash,
});
await platform.serve({
  hostname: HOSTNAME,
  port: Number(env("PORT", PORT_DEFAULT)),
  maxRequestBodyBytes: requestBodyBytesBackstop,
}, app.fetch);
