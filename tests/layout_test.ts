// The shape of the source tree, checked: imports run one way (functions → runtime/protocol
// → runtime → storage), no import cycle, and no product file over 400 lines (STYLE.md).
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

const ROOT = normalize(join(dirname(new URL(import.meta.url).pathname), ".."));
const PRODUCT = ["functions", "runtime", "storage", "client", "tools", "cli"];
const LINES_MAX = 400;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...sources(path));
    else if (name.endsWith(".ts") && !name.endsWith("_test.ts")) out.push(path);
  }
  return out;
}

/** Relative imports of a file (static `import`/`export … from` and dynamic `import()`). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const found: string[] = [];
  const pattern = /(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;
  for (const m of text.matchAll(pattern)) {
    found.push(normalize(join(dirname(file), m[1])));
  }
  return found;
}

const files = PRODUCT.flatMap(sources);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

/** Entry files compose a process: they pick the platform and the SDK, then mount the app
 * (broker_link.ts is the SDK link the two share; split.ts is the rest of main.ts, loaded
 * once the KV is opening). */
const FUNCTIONS_ENTRIES = new Set([
  "functions/main.ts",
  "functions/split.ts",
  "functions/start.ts",
  "functions/deploy.ts",
  "functions/broker_link.ts",
]);

Deno.test("functions/ imports only runtime/protocol/ among our modules (entry files aside)", () => {
  const bad = [...graph].flatMap(([file, deps]) =>
    file.startsWith("functions/") && !FUNCTIONS_ENTRIES.has(file)
      ? deps.filter((d) => !d.startsWith("functions/") && !d.startsWith("runtime/protocol/"))
        .map((d) => `${file} -> ${d}`)
      : []
  );
  assert.deepEqual(bad, []);
});

Deno.test("storage/ imports nothing above it, and runtime/ never imports client/ or functions/", () => {
  const bad = [...graph].flatMap(([file, deps]) =>
    deps.filter((d) =>
      (file.startsWith("storage/") && !d.startsWith("storage/")) ||
      (file.startsWith("runtime/") && (d.startsWith("client/") || d.startsWith("functions/")) &&
        file !== "runtime/main.ts")
    ).map((d) => `${file} -> ${d}`)
  );
  assert.deepEqual(bad, []);
});

Deno.test("cli/ imports only the SDK (client/) and runtime/protocol/ among our modules", () => {
  const bad = [...graph].flatMap(([file, deps]) =>
    file.startsWith("cli/")
      ? deps.filter((d) =>
        !d.startsWith("cli/") && !d.startsWith("client/") && !d.startsWith("runtime/protocol/")
      ).map((d) => `${file} -> ${d}`)
      : []
  );
  assert.deepEqual(bad, []);
});

Deno.test("no import cycle among product modules", () => {
  const state = new Map<string, "open" | "done">();
  const cycles: string[] = [];
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === "done") return;
    if (state.get(file) === "open") {
      cycles.push(
        [...path.slice(path.indexOf(file)), file].map((f) => relative(".", f)).join(" -> "),
      );
      return;
    }
    state.set(file, "open");
    for (const dep of graph.get(file) ?? []) visit(dep, [...path, file]);
    state.set(file, "done");
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});

Deno.test(`no product source file over ${LINES_MAX} lines`, () => {
  const long = files
    .map((f) => ({ f, lines: readFileSync(join(ROOT, f), "utf8").split("\n").length }))
    .filter(({ lines }) => lines > LINES_MAX)
    .map(({ f, lines }) => `${f}: ${lines}`);
  assert.deepEqual(long, []);
});

Deno.test("the median product source file is under 150 lines", () => {
  const lines = files.map((f) => readFileSync(join(ROOT, f), "utf8").split("\n").length)
    .sort((a, b) => a - b);
  const median = lines[Math.floor((lines.length - 1) / 2)];
  assert.ok(median < 150, `median ${median} lines over ${lines.length} files`);
});
