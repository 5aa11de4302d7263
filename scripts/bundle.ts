// Bundles the two process entry files into a few ES module chunks under dist/ (ignored by
// git), for a faster cold start: Deno and Bun spend most of a start loading ~700 module
// files (our ~340 and zod's, drizzle-orm's, hono's); with a dozen chunks the start to the
// first produce takes 15–35% less CPU (bench/README.md "Round 3 (branch hot-start)").
//
//   deno run -A scripts/bundle.ts [--outdir dist] [--if-stale]
//   deno run -A dist/runtime/main.js      (or: bun run dist/runtime/main.js)
//   deno run -A dist/functions/main.js    (split mode)
//
// The sources stay the entry files (`deno run -A runtime/main.ts` is unchanged); a bundle is
// a build of them. It writes dist/stamp.json, and the start files (runtime/start.ts, which
// `deno task start` runs, and functions/start.ts) run the bundle only while every input is
// unchanged, else the sources (runtime/bundle_stamp.ts). scripts/install.sh rebuilds it
// when stale (--if-stale); bench/runtime/startup_bench.ts and tests/bundle_test.ts build one. Chunks are split at dynamic imports, so what
// main.ts loads only when on (gRPC, remoting, the HA node) stays out of the first load.
// Packages with native parts or files read at run time stay external and load from
// node_modules, which is why the output must sit inside the repository.
import * as esbuild from "esbuild";
import { writeFileSync } from "node:fs";
import { checkBundle, STAMP_FILE, stampFiles, stampOf } from "../runtime/bundle_stamp.ts";

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
    // No comments or indentation: ~2.7 MiB less idle RSS on Deno, which keeps the source as
    // UTF-16 when a comment has a non-Latin-1 character (bench/README.md, "Round 6 … idle RSS").
    minifyWhitespace: true,
  });
  await esbuild.stop();
  // The stamp that lets runtime/start.ts and functions/start.ts run this bundle while every
  // input is unchanged (runtime/bundle_stamp.ts).
  const outs = result.metafile.outputs;
  const outputs: Record<string, string> = {};
  const entryInputs: Record<string, string[]> = {};
  for (const [out, meta] of Object.entries(outs)) {
    if (!meta.entryPoint || !BUNDLE_ENTRIES.includes(meta.entryPoint)) continue;
    outputs[meta.entryPoint] = out.slice(outdir.length + 1);
    // Every chunk the entry may load, now or later (static and dynamic imports).
    const chunks = new Set<string>();
    const todo = [out];
    while (todo.length > 0) {
      const chunk = todo.pop()!;
      if (chunks.has(chunk) || !outs[chunk]) continue;
      chunks.add(chunk);
      for (const i of outs[chunk].imports) if (!i.external) todo.push(i.path);
    }
    const read = [...chunks].flatMap((c) => Object.keys(outs[c].inputs));
    entryInputs[meta.entryPoint] = stampedInputs(read.filter((p) => !p.includes(":")));
  }
  const inputs = [...new Set(Object.values(entryInputs).flat())];
  writeFileSync(
    `${root}/${outdir}/${STAMP_FILE}`,
    JSON.stringify(
      stampOf(await stampFiles(), root.replace(/\/$/, ""), inputs, outputs, entryInputs),
    ),
  );
  return Object.keys(result.metafile.outputs);
}

/** Our source files as they are, and of each bundled package its package.json (its version:
 * an install or upgrade rewrites it), instead of its ~250 files: every stat at start costs
 * memory (bench/README.md "Round 5 (branch idle)"). Hand edits inside node_modules are not
 * seen; rebuild after one (deno task bundle). */
export function stampedInputs(inputs: string[]): string[] {
  const out = new Set<string>();
  for (const path of inputs) {
    const at = path.lastIndexOf("node_modules/");
    if (at < 0) {
      out.add(path);
      continue;
    }
    const parts = path.slice(at + "node_modules/".length).split("/");
    const name = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
    out.add(`${path.slice(0, at)}node_modules/${name}/package.json`);
  }
  return [...out];
}

/** Whether every entry's bundle under `outdir` is fresh (runtime/bundle_stamp.ts). */
export async function bundleFresh(outdir: string): Promise<boolean> {
  const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const files = await stampFiles();
  return BUNDLE_ENTRIES.every((e) => "bundle" in checkBundle(files, root, outdir, e));
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--outdir");
  const outdir = i >= 0 ? Deno.args[i + 1] : "dist";
  if (Deno.args.includes("--if-stale") && await bundleFresh(outdir)) {
    console.log(`${outdir}/ is fresh`);
    Deno.exit(0);
  }
  const files = await bundle(outdir);
  console.log(`wrote ${files.filter((f) => f.endsWith(".js")).length} files under ${outdir}/`);
}
