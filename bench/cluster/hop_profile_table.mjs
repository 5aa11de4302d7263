// Where a functions process's main thread spends its time per message under the hop load,
// from the .cpuprofile that bench/cluster/profile_hop.ts writes:
//   node bench/cluster/hop_profile_table.mjs <file.cpuprofile> <messages/s> [seconds]
// Only samples from 1.5 s after the load starts to 0.4 s before the profile ends count. Each
// sample's self time goes to one row: "in:body" when the stack passes through
// functions/body.ts (the request body read), otherwise the row of the frame nearest the leaf
// that names one (ours or the runtime's), then "other"; idle and GC are the engine's own
// rows. Prints µs per message per row; "busy" leaves idle out. Deno marks idle time, Bun does
// not (its event-loop wait lands in native frames). Figures: bench/README.md, round 3.
import fs from "node:fs";
import process from "node:process";

const [file, rateText, secondsText = "8"] = process.argv.slice(2);
if (!file || !(Number(rateText) > 0)) {
  process.stderr.write("usage: hop_profile_table.mjs <file.cpuprofile> <messages/s> [seconds]\n");
  process.exit(2);
}
const p = JSON.parse(fs.readFileSync(file, "utf8"));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const end = p.endTime - 400_000;
const start = end - Number(secondsText) * 1e6 + 1.5e6;
const self = new Map();
let t = p.startTime;
for (let i = 0; i < p.samples.length; i++) {
  t += p.timeDeltas[i];
  if (t < start || t > end) continue;
  self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i + 1] ?? 0));
}
const messages = Number(rateText) * (end - start) / 1e6;
const ENGINE = { "(idle)": "idle", "(garbage collector)": "GC", "(program)": "program" };
const RULES = [
  [/\/client\/|26_fetch|op_fetch/, "outbound (SDK, fetch)"],
  [/runtime\/cluster\//, "router and coalescer"],
  [/http_metrics|prom_text/, "HTTP metrics"],
  [/functions\/|runtime\/protocol/, "route"],
  [/hono/, "Hono"],
  [/deno_http|23_response|23_request|20_headers|serve/, "server (Request, Response)"],
];
const rows = new Map();
for (const [id, us] of self) {
  const stack = [];
  for (let x = id; x !== undefined; x = parent.get(x)) stack.push(byId.get(x).callFrame);
  let row = ENGINE[stack[0].functionName];
  if (!row && stack.some((f) => /functions\/body\.ts/.test(f.url))) row = "in:body (readBody)";
  if (!row) {
    for (const f of stack) {
      const hit = RULES.find(([re]) => re.test(`${f.url} ${f.functionName}`));
      if (hit) {
        row = hit[1];
        break;
      }
    }
  }
  row ??= "other";
  rows.set(row, (rows.get(row) ?? 0) + us);
}
let busy = 0;
for (const [row, us] of rows) if (row !== "idle") busy += us;
console.log(`| row | µs per message |\n| --- | ---: |`);
for (const [row, us] of [...rows].sort((a, b) => b[1] - a[1])) {
  console.log(`| ${row} | ${(us / messages).toFixed(1)} |`);
}
console.log(`| busy | ${(busy / messages).toFixed(1)} |`);
