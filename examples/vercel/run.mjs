// Runs the edge route in Vercel's edge-runtime (the runtime `vercel dev` uses for edge
// functions) on 127.0.0.1, port 0: `node examples/vercel/run.mjs`, with MQ_URL set.
// Prints {"event":"listening","url":…}; SIGTERM stops.
import { build } from "esbuild";
import { EdgeRuntime, runServer } from "edge-runtime";

const bundle = await build({
  entryPoints: [new URL("./api/produce.ts", import.meta.url).pathname],
  bundle: true,
  format: "iife",
  globalName: "route",
  target: "es2022",
  write: false,
  logLevel: "warning",
});
const runtime = new EdgeRuntime({
  initialCode: `${bundle.outputFiles[0].text}
addEventListener("fetch", (event) => event.respondWith(route.default(event.request)));`,
  extend: (context) =>
    Object.assign(context, {
      process: { env: { MQ_URL: process.env.MQ_URL, MQ_TOKEN: process.env.MQ_TOKEN } },
    }),
});
const server = await runServer({ runtime, host: "127.0.0.1", port: 0 });
console.log(JSON.stringify({ event: "listening", url: server.url.replace(/\/$/, "") }));
process.on("SIGTERM", async () => {
  await server.close();
  process.exit(0);
});
