// What a process loads before it listens: the modules the entry files import statically
// (`deno info`'s graph, dynamic imports and `import type` left out). What the first produce
// does not need loads on first use (bench/README.md, "Cold start"), so it must stay out of
// this graph: a static import of any of it puts its parse and evaluation back into every
// cold start.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = normalize(join(dirname(new URL(import.meta.url).pathname), ".."));

interface Module {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

/** `deno info --json entry`'s modules, dynamic imports included. */
async function denoInfo(entry: string): Promise<Module[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.ok(out.success, `deno info ${entry} failed`);
  return JSON.parse(new TextDecoder().decode(out.stdout)).modules as Module[];
}

/** Where an entry goes on at once by a dynamic import, before it listens: functions/main.ts
 * opens the KV first, then loads the split process. */
const LOADED_AT_ONCE: Record<string, string[]> = { "functions/main.ts": ["functions/split.ts"] };

/** Repository-relative paths of the modules `entry` loads before it listens: its static
 * graph and that of what it imports at once (LOADED_AT_ONCE). */
async function staticGraph(
  entry: string,
  atOnce = LOADED_AT_ONCE[entry] ?? [],
): Promise<Set<string> & { packages: Set<string>; builtins: Set<string> }> {
  const modules = new Map<string, Module>();
  for (const m of await denoInfo(entry)) modules.set(m.specifier, m);
  const seen = new Set<string>();
  const walk = [entry, ...atOnce].map((e) => new URL(e, `file://${ROOT}/`).href);
  while (walk.length > 0) {
    const at = walk.pop()!;
    if (seen.has(at)) continue;
    seen.add(at);
    for (const d of modules.get(at)?.dependencies ?? []) {
      if (d.code && !d.isDynamic) walk.push(d.code.specifier);
    }
  }
  const files = [...seen].filter((s) => s.startsWith("file://")).map((s) =>
    relative(ROOT, new URL(s).pathname)
  );
  const ours = new Set(files.filter((f) => !f.startsWith("..") && !f.includes("node_modules/")));
  // Packages (deno info lists each package's entry file, outside the repository by the
  // node_modules link): named by their folder under node_modules.
  const packages = new Set(
    files.filter((f) => f.includes("node_modules/")).map((f) =>
      f.split("node_modules/")[1].split("/").slice(
        0,
        f.split("node_modules/")[1].startsWith("@") ? 2 : 1,
      ).join("/")
    ),
  );
  const builtins = new Set([...seen].filter((s) => s.startsWith("node:")));
  return Object.assign(ours, { packages, builtins });
}

/** Loaded on first use, never before the first produce. */
const LAZY = [
  "functions/full_app.ts",
  "functions/routes/produce.ts",
  "functions/routes/route.ts",
  "functions/routes/wire_schemas.ts",
  "functions/batch_input.ts",
  "functions/routes/topics.ts",
  "functions/routes/pull.ts",
  "functions/routes/pop.ts",
  "functions/routes/groups.ts",
  "functions/routes/transactions.ts",
  "functions/routes/subscriptions.ts",
  "functions/routes/ops.ts",
  "functions/routes/dashboard.ts",
  "functions/dashboard/page.ts",
  "functions/dashboard/uplot_vendor.ts",
  "functions/qstash/app.ts",
  // The gRPC transport and descriptor load on the first gRPC connection, the HA node only
  // in a replicated group, the remoting front end only when it is on.
  "functions/grpc/h2/lean.ts",
  "functions/grpc/service.ts",
  "runtime/ha/node.ts",
  "functions/remoting/mod.ts",
];

Deno.test("every module the startup graph test keeps out exists", () => {
  for (const f of LAZY) assert.ok(existsSync(join(ROOT, f)), `${f} is gone: update LAZY`);
});

for (const entry of ["runtime/main.ts", "functions/main.ts", "functions/deploy.ts"]) {
  Deno.test(`${entry} loads only what its first produce needs before it listens`, async () => {
    const graph = await staticGraph(entry);
    // The walk itself works: what the first produce needs is there.
    assert.ok(graph.has("functions/app.ts"), [...graph].join("\n"));
    assert.ok(graph.has("functions/routes/produce_one.ts"));
    const loaded = LAZY.filter((f) => graph.has(f));
    assert.deepEqual(loaded, [], `statically imported by ${entry}: ${loaded.join(", ")}`);
    // Nor zod, @hono/zod-openapi and the OpenAPI generator: a third of the cold start.
    const packages = [...graph.packages].filter((p) => /zod/.test(p));
    assert.deepEqual(packages, [], `${entry} loads ${packages.join(", ")} before it listens`);
  });
}

Deno.test("functions/main.ts begins opening the KV before it loads the app", async () => {
  // A KV Connect client's first request waits ~40 ms after it connects; the app's load
  // overlaps that wait only if the entry itself holds no more than the platform picker
  // (bench/README.md, "Round 7 … functions cold start").
  const entryOnly = await staticGraph("functions/main.ts", []);
  assert.ok(entryOnly.has("runtime/platform/pick.ts"), [...entryOnly].join("\n"));
  const early = [...entryOnly].filter((f) =>
    f.startsWith("functions/") && f !== "functions/main.ts"
  );
  assert.deepEqual(early, [], `loaded before the KV opens: ${early.join(", ")}`);
  const source = Deno.readTextFileSync(join(ROOT, "functions/main.ts"));
  assert.ok(
    source.indexOf("platform.openKv(") < source.indexOf('import("./split.ts")'),
    "the KV opens before the split process loads",
  );
});

for (const entry of ["functions/main.ts", "functions/deploy.ts"]) {
  Deno.test(`${entry} loads no Node built-in but process and timers before it listens`, async () => {
    // On Deno each of node:fs, node:net, node:crypto, node:zlib costs a split-mode process
    // milliseconds of its cold start (bench/README.md): they load on first use there.
    const graph = await staticGraph(entry);
    assert.ok(graph.builtins.has("node:process"), "the walk sees built-ins");
    const more = [...graph.builtins].filter((b) => b !== "node:process" && b !== "node:timers");
    assert.deepEqual(more, [], `${entry} loads ${more.join(", ")} before it listens`);
  });
}

Deno.test("runtime/main.ts leaves Node's crypto, net, tls, dns and zlib to first use", async () => {
  // On Bun importing any of them costs idle RSS at once (runtime/protocol/node_builtins.ts,
  // storage/crc32.ts; bench/README.md, "Round 6 … idle RSS").
  const graph = await staticGraph("runtime/main.ts");
  assert.ok(graph.builtins.has("node:process"), "the walk sees built-ins");
  const eager = ["node:crypto", "node:net", "node:tls", "node:dns/promises", "node:zlib"]
    .filter((b) => graph.builtins.has(b));
  assert.deepEqual(eager, [], `imported before the broker listens: ${eager.join(", ")}`);
});

Deno.test("the start files load only the freshness check before they pick bundle or sources", async () => {
  // Every module deno info finds, dynamic imports included: an analyzable import of either
  // graph would have Deno load (and type-strip) it before the first line runs.
  for (
    const [entry, expected] of [
      ["runtime/start.ts", ["runtime/bundle_stamp.ts", "runtime/start.ts"]],
      ["functions/start.ts", ["functions/start.ts", "runtime/bundle_stamp.ts"]],
    ] as const
  ) {
    const files = (await denoInfo(entry)).map((m) => m.specifier).filter((s) =>
      s.startsWith("file://")
    )
      .map((s) => relative(ROOT, new URL(s).pathname)).sort();
    assert.deepEqual(files, expected);
  }
});
