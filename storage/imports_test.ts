// The layer rule of STYLE.md for storage/: it imports nothing above it, and its modules
// import each other without cycles (a cycle ties modules that should change alone).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const STORAGE_DIR = dirname(fileURLToPath(import.meta.url));
const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/g;

/** Every .ts file under `dir` -> the files its relative imports name. */
function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    if (!name.endsWith(".ts")) continue;
    const file = join(dir, name);
    const source = fs.readFileSync(file, "utf8");
    const targets = [...source.matchAll(SPECIFIER)]
      .map((m) => m[1])
      .filter((s) => s.startsWith("."))
      .map((s) => normalize(join(dirname(file), s)));
    graph.set(file, targets);
  }
  return graph;
}

/** One cycle of the graph as a path [a, b, ..., a], or undefined if it has none. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === "done") return undefined;
    if (state.get(node) === "open") return [...path.slice(path.indexOf(node)), node];
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, "done");
    return undefined;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

Deno.test("findCycle() finds a cycle and passes a graph without one", () => {
  const cyclic = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]);
  assert.deepEqual(findCycle(cyclic), ["a", "b", "c", "a"]);
  assert.equal(findCycle(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]])), undefined);
});

Deno.test("storage/ imports nothing above it and has no import cycle", () => {
  const graph = importGraph(STORAGE_DIR);
  assert.ok(graph.size > 40, "the walk found storage's files");
  const outside = [...graph].flatMap(([file, targets]) =>
    targets.filter((t) => relative(STORAGE_DIR, t).startsWith("..")).map((t) =>
      `${relative(STORAGE_DIR, file)} -> ${t}`
    )
  );
  assert.deepEqual(outside, []);
  const cycle = findCycle(graph)?.map((file) => relative(STORAGE_DIR, file));
  assert.equal(cycle, undefined);
});
