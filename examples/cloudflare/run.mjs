// Runs a worker of this folder in workerd (Cloudflare's runtime) through Miniflare 3,
// listening on 127.0.0.1 (port 0): `node examples/cloudflare/run.mjs <worker.ts>`, with the
// bindings as JSON in WORKER_BINDINGS. Prints {"event":"listening","url":…}; SIGTERM stops.
import { build } from "esbuild";
import { Miniflare } from "miniflare";

const entry = process.argv[2];
const bundle = await build({
  entryPoints: [entry],
  bundle: true,
  format: "esm",
  target: "es2022",
  write: false,
  logLevel: "warning",
});
const mf = new Miniflare({
  modules: true,
  script: bundle.outputFiles[0].text,
  compatibilityDate: "2024-09-23",
  bindings: JSON.parse(process.env.WORKER_BINDINGS ?? "{}"),
  host: "127.0.0.1",
  port: 0,
});
const url = await mf.ready;
console.log(JSON.stringify({ event: "listening", url: url.href.replace(/\/$/, "") }));
process.on("SIGTERM", async () => {
  await mf.dispose();
  process.exit(0);
});
