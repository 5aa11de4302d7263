// Where a server's main thread spends its time per request, from a V8/JSC .cpuprofile
// (`deno run --cpu-prof --cpu-prof-dir=D …` or `bun --cpu-prof --cpu-prof-dir=D run …`,
// written when the process exits). Self time is put into categories by module (a native
// frame counts toward its caller's category); only samples in the last `seconds` of load,
// ending 0.4 s before the profile ends (shutdown), count.
//   node bench/http/profile_table.mjs <file.cpuprofile> <requests/s> <seconds>
// Prints a markdown table: µs per request and share of busy time. Deno's profiles mark idle
// time "(idle)", Bun's do not (its event-loop wait lands in native frames), so on Bun only
// the rows of our own modules read as µs per request. Figures: bench/README.md.
import fs from "node:fs";
import process from "node:process";

const [file, rpsText, secondsText = "5"] = process.argv.slice(2);
if (!file || !(Number(rpsText) > 0)) {
  process.stderr.write("usage: profile_table.mjs <file.cpuprofile> <requests/s> [seconds]\n");
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, "utf8"));
const seconds = Number(secondsText);
const requests = Number(rpsText) * seconds;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const OURS = /\/(functions|runtime|storage)\//;
const RULES = [
  [/functions\/http_metrics|prom_text/, "HTTP metrics (instrumentFetch)"],
  [/functions\/(routes\/produce|produce_input|body)/, "produce route: headers, body limit, answer"],
  [/functions\//, "functions/, other"],
  [/runtime\/core\/traffic/, "traffic counters"],
  [/runtime\/(core\/producer|core\/message_id|protocol)/, "Producer: checks, properties, id"],
  [/runtime\//, "runtime/, other (long polling, arrivals)"],
  [/storage\/index/, "IndexFile.putKeyHash"],
  [/storage\/consume_queue/, "ConsumeQueue.put"],
  [/storage\/(message\/record|put_message|message_store)/, "record encoding, MessageStore.put"],
  [/storage\/(commit_log|write_gate|node_fs_port)/, "CommitLog append and write (JS)"],
  [/storage\/dispatcher/, "dispatch"],
  [/storage\//, "storage/, other"],
];

function category(id) {
  const { functionName: f, url: u = "" } = byId.get(id).callFrame;
  if (f === "(idle)") return undefined;
  if (f === "(garbage collector)") return "GC";
  if (f === "(program)") return "runtime (program)";
  if (f === "op_read_all" || /06_streams|22_body/.test(u)) return "request body read (runtime)";
  if (/write_?sync/i.test(f) && !OURS.test(u)) return "CommitLog write syscall";
  if (/f(data)?sync/i.test(f) && !OURS.test(u)) return "fdatasync";
  if (/node_modules\/.*hono/.test(u)) return "Hono: router, context, c.json";
  if (/node_modules\/.*zod/.test(u)) return "zod";
  if (OURS.test(u) && !/node_modules/.test(u)) {
    for (const [re, name] of RULES) if (re.test(u)) return name;
  }
  const up = parent.get(id);
  if (!u && up !== undefined) {
    const c = category(up);
    if (c !== undefined && c !== "runtime (program)") return c;
  }
  return "runtime: HTTP server, Request/Response, other";
}

const times = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push(t += d);
const to = profile.endTime - 0.4e6, from = to - seconds * 1e6;
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  if (times[i] < from || times[i] >= to) continue;
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const rows = new Map();
let busy = 0;
for (const [id, us] of self) {
  const c = category(id);
  if (c === undefined) continue;
  busy += us;
  rows.set(c, (rows.get(c) ?? 0) + us);
}
console.log(
  `main thread busy ${(busy / requests).toFixed(2)} µs per request (${requests} requests)`,
);
console.log("| category | µs/req | share |\n| --- | ---: | ---: |");
for (const [c, us] of [...rows].sort((a, b) => b[1] - a[1])) {
  console.log(`| ${c} | ${(us / requests).toFixed(2)} | ${(us / busy * 100).toFixed(1)}% |`);
}
