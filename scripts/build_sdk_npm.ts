// The npm build of the SDK (client/): ESM bundles by esbuild (one per export, shared code
// split into chunks) and .d.ts declarations by tsc, staged with client/package.json and
// client/README.md in a folder `npm pack` packs. tsc runs with --erasableSyntaxOnly, so
// the sources stay what Node's and Bun's type stripping accept.
//   deno run -A scripts/build_sdk_npm.ts [outDir]      (default client/npm; then
//   cd client/npm && npm pack)
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLIENT = join(ROOT, "client");
const BIN = join(ROOT, "node_modules", ".bin");
const ENTRIES = ["mod.ts", "webhooks.ts", "consumer.ts", "transactions.ts"];

async function run(cmd: string, args: string[], cwd = ROOT): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed:\n${text}`);
  return text;
}

/** Builds the package into `outDir` (emptied first); returns outDir. */
export async function buildSdkNpm(outDir: string): Promise<string> {
  await Deno.remove(outDir, { recursive: true }).catch(() => {});
  const dist = join(outDir, "dist");
  await Deno.mkdir(dist, { recursive: true });
  await run(join(BIN, "esbuild"), [
    ...ENTRIES.map((e) => join(CLIENT, e)),
    "--bundle",
    "--splitting",
    "--format=esm",
    "--platform=neutral",
    "--target=es2022",
    `--outdir=${dist}`,
    "--log-level=warning",
  ]);
  await run(join(BIN, "tsc"), [
    "--declaration",
    "--emitDeclarationOnly",
    "--allowImportingTsExtensions",
    "--erasableSyntaxOnly",
    "--verbatimModuleSyntax",
    "--isolatedModules",
    "--strict",
    "--skipLibCheck",
    "--target",
    "es2022",
    "--module",
    "esnext",
    "--moduleResolution",
    "bundler",
    "--lib",
    "es2022,dom",
    "--outDir",
    dist,
    ...ENTRIES.map((e) => join(CLIENT, e)),
  ]);
  // Declarations name their neighbours as .js, which the package holds.
  for await (const entry of Deno.readDir(dist)) {
    if (!entry.name.endsWith(".d.ts")) continue;
    const path = join(dist, entry.name);
    const text = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, text.replace(/(from\s+"\.\/[\w.-]+)\.ts"/g, '$1.js"'));
  }
  await Deno.copyFile(join(CLIENT, "package.json"), join(outDir, "package.json"));
  await Deno.copyFile(join(CLIENT, "README.md"), join(outDir, "README.md"));
  return outDir;
}

/** Builds into `outDir` and runs `npm pack` there; returns the tarball's path. */
export async function packSdkNpm(outDir: string): Promise<string> {
  await buildSdkNpm(outDir);
  const out = await run("npm", ["pack", "--silent", "--ignore-scripts"], outDir);
  const name = out.trim().split("\n").pop()!.trim();
  return join(outDir, name);
}

if (import.meta.main) {
  const outDir = Deno.args[0] ?? join(CLIENT, "npm");
  console.log(await packSdkNpm(outDir));
}
