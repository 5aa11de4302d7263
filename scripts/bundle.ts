// Bundles the two process entry files into a few ES module chunks under dist/ (ignored by
// git), for a faster cold start: Deno and Bun spend most of a start loading ~700 module
// files (our ~340 and zod's, drizzle-orm's, hono's); with a dozen chunks the start to the
// first produce takes 15–35% less CPU (bench/README.md "Round 3 (branch hot-start)").
//
//   deno run -A scripts/bundle.ts [--outdir dist]
//   deno run -A dist/runtime/main.js      (or: bun run dist/runtime/main.js)
//   deno run -A dist/functions/main.js    (split mode)
//
// The sources stay the entry files (`deno run -A runtime/main.ts` is unchanged); a bundle is
// a build of them, so rebuild after every change (bench/runtime/startup_bench.ts and
// tests/bundle_test.ts build a fresh one). Chunks are split at dynamic imports, so what
// main.ts loads only when on (gRPC, remoting, the HA node) stays out of the first load.
// Packages with native parts or files read at run time stay external and load from
// node_modules, which is why the output must sit inside the repository.
import * as esbuild from "esbuild";

/** Loaded from node_modules at run time: native addons, .proto files, optional clients. */
export const BUNDLE_EXTERNAL = [
  "@deno/kv",
  "@grpc/grpc-js",
  "@grpc/proto-loader",
  "rocketmq-client-nodejs",
  "etcd3",
];

/** The entry files, relative to the repository root, and where their bundles land. */
export const BUNDLE_ENTRIES = ["runtime/main.ts", "functions/main.ts"];

export async function bundle(outdir: string): Promise<string[]> {
  const root = new URL("..", import.meta.url).pathname;
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: BUNDLE_ENTRIES,
    outbase: ".",
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "esnext",
    external: BUNDLE_EXTERNAL,
    chunkNames: "chunks/[name]-[hash]",
    logLevel: "warning",
    metafile: true,
  });
  await esbuild.stop();
  return Object.keys(result.metafile.outputs);
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--outdir");
  const outdir = i >= 0 ? Deno.args[i + 1] : "dist";
  const files = await bundle(outdir);
  console.log(`wrote ${files.filter((f) => f.endsWith(".js")).length} files under ${outdir}/`);
}
