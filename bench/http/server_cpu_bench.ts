// Server CPU per request, user and system apart, for the hello baseline, the stub broker
// (the functions layer over a core that costs nothing) and the broker, on the runtime this
// runs on. Rates swing on a shared machine; CPU per request moves much less, and the
// user/system split tells JavaScript from syscalls and the kernel's work (page cache
// copies, socket I/O). Same file on Deno and Bun:
//   deno run -A bench/http/server_cpu_bench.ts [--json] [--seconds 4] [--rounds 3] [--only hello,stub,broker]
//   bun run bench/http/server_cpu_bench.ts     [--json] [--seconds 4] [--rounds 3]
// Each round runs autocannon -c 64 against each server in turn (1 KiB POST to
// /v1/topics/bench/messages) and reads the server's utime/stime from /proc/<pid>/stat
// before and after, and its main thread's from /proc/<pid>/task/<pid>/stat: the JS thread's
// share of the wall time (`_main_thread_busy`) says whether that thread is what bounds the
// rate. Figures are medians over the rounds (bench/README.md, "Produce path").
import process from "node:process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { brokerEnv, startServer } from "../broker_process.ts";
import { autocannonPost, commandLine, median, runtimeInfo } from "../support.ts";

const flags = commandLine();
const seconds = flags.number("seconds", 4);
const rounds = flags.number("rounds", 3);
const only = flags.string("only", "hello,stub,broker").split(",");
const json = flags.has("json");
const rt = runtimeInfo();
const say = (line: string) => process.stderr.write(line + "\n");
const dataDir = mkdtempSync(`${tmpdir()}/mq-bench-cpu-`);

const SERVERS: Record<string, { script: string; env: Record<string, string> }> = {
  hello: { script: "bench/http/hello_server.ts", env: {} },
  stub: { script: "bench/http/stub_broker_server.ts", env: {} },
  broker: {
    script: "runtime/main.ts",
    env: brokerEnv(dataDir),
  },
};

interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

function start(name: string): Promise<Server> {
  const { script, env } = SERVERS[name];
  return startServer(script, env);
}

/** utime and stime of a process (all threads), and of its main thread (the JS thread), ms. */
function cpuMs(pid: number): { user: number; sys: number; main: number } {
  const fields = (path: string) => {
    const stat = readFileSync(path, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  };
  const f = fields(`/proc/${pid}/stat`);
  const m = fields(`/proc/${pid}/task/${pid}/stat`);
  return {
    user: Number(f[11]) * 10,
    sys: Number(f[12]) * 10,
    main: (Number(m[11]) + Number(m[12])) * 10,
  };
}

/** Requests autocannon made POSTing `bodyFile` to `url` (all 2xx). */
async function autocannon(url: string, bodyFile: string, c: number, s: number): Promise<number> {
  return (await autocannonPost(url, bodyFile, c, s)).requests;
}

const bodyFile = `${dataDir}/body-1k`;
writeFileSync(bodyFile, new Uint8Array(1024).fill(97));
const servers: Record<string, Server> = {};
const samples: Record<
  string,
  { rate: number[]; user: number[]; sys: number[]; main: number[]; busy: number[] }
> = {};
try {
  for (const name of only) servers[name] = await start(name);
  if (servers.broker) {
    const r = await fetch(`${servers.broker.url}/v1/topics/bench`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ readQueueNums: 8, writeQueueNums: 8 }),
    });
    await r.body?.cancel();
  }
  const path = "/v1/topics/bench/messages";
  for (const name of only) await autocannon(servers[name].url + path, bodyFile, 16, 1);
  for (let round = 1; round <= rounds; round++) {
    for (const name of only) {
      const { pid, url } = servers[name];
      const before = cpuMs(pid);
      const started = performance.now();
      const n = await autocannon(url + path, bodyFile, 64, seconds);
      const took = (performance.now() - started) / 1000;
      const after = cpuMs(pid);
      const s = samples[name] ??= { rate: [], user: [], sys: [], main: [], busy: [] };
      s.rate.push(n / took);
      s.user.push((after.user - before.user) * 1000 / n);
      s.sys.push((after.sys - before.sys) * 1000 / n);
      s.main.push((after.main - before.main) * 1000 / n);
      s.busy.push((after.main - before.main) / (took * 1000));
      say(
        `round ${round} ${name.padEnd(6)} ${(n / took).toFixed(0)} req/s  user ${
          s.user.at(-1)!.toFixed(1)
        } µs/req  sys ${s.sys.at(-1)!.toFixed(1)} µs/req  main thread ${
          s.main.at(-1)!.toFixed(1)
        } µs/req (busy ${(s.busy.at(-1)! * 100).toFixed(0)}%)`,
      );
    }
  }
} finally {
  for (const s of Object.values(servers)) await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
const result: Record<string, string | number> = { runtime: `${rt.name} ${rt.version}`, seconds };
for (const [name, s] of Object.entries(samples)) {
  result[`${name}_user_us_per_req`] = Number(median(s.user).toFixed(1));
  result[`${name}_sys_us_per_req`] = Number(median(s.sys).toFixed(1));
  result[`${name}_cpu_us_per_req`] = Number(median(s.user.map((u, i) => u + s.sys[i])).toFixed(1));
  result[`${name}_main_thread_us_per_req`] = Number(median(s.main).toFixed(1));
  result[`${name}_main_thread_busy`] = Number(median(s.busy).toFixed(2));
  result[`${name}_req_per_s`] = Math.round(median(s.rate));
}
if (json) process.stdout.write(JSON.stringify(result) + "\n");
else for (const [k, v] of Object.entries(result)) process.stdout.write(`${k.padEnd(26)} ${v}\n`);
