// Webhook POSTs per second from one client to one loopback receiver: our pinned client
// (URL re-check, address re-vet, runtime/webhook/h1_delivery.ts, which egress.ts uses since
// issue #6) beside two same-run baselines, a bare node:http keep-alive request and the
// runtime's fetch (the alternative we did not take: it honours proxy variables and cannot
// pin a TLS connection portably). Same file on Deno and Bun:
//
//   deno run -A bench/webhook/post_client_bench.ts [--seconds 2] [--rounds 3] [--concurrency 1,32] [--json]
//   bun run bench/webhook/post_client_bench.ts     [--seconds 2] [--rounds 3] [--concurrency 1,32] [--json]
//
// Candidates take turns, round after round, and each figure is the median of its rounds, so
// warm-up and the VM's drift do not favour whichever runs last.
// The receiver is this file again in a child process (`--receiver`), on the runtime's own
// server (Deno.serve / Bun.serve), answering 200 "ok" after reading the body, so the client
// and the receiver each get one of the two cores.
import { spawn } from "node:child_process";
import http from "node:http";
import process from "node:process";
import { createInterface } from "node:readline";
import { H1WebhookClient } from "../../runtime/webhook/h1_delivery.ts";
import { createEgressPolicy, type VettedAddress } from "../../runtime/webhook/ssrf.ts";
import { commandLine, count, ratio, round, runtimeInfo, say } from "../support.ts";

const flags = commandLine();

type Post = () => Promise<number>;

interface Candidate {
  name: string;
  make(port: number, concurrency: number): { post: Post; close(): Promise<void> };
}

// A Standard Webhooks-shaped delivery: ~200 bytes of JSON and the three headers.
const BODY = JSON.stringify({
  type: "order.created",
  timestamp: "2026-01-01T00:00:00.000Z",
  data: { id: "ord_1", note: "x".repeat(120) },
});
const HEADERS = {
  "content-type": "application/json",
  "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
  "webhook-timestamp": "1674087231",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const LOOPBACK: VettedAddress = { address: "127.0.0.1", family: 4 };

type PinnedClient = H1WebhookClient;

/** A candidate that goes through the whole pinned path: URL re-check, address re-vet. */
function pinned(name: string, build: (port: number, concurrency: number) => PinnedClient) {
  return {
    name,
    make(port: number, concurrency: number) {
      const client = build(port, concurrency);
      const url = `http://receiver.invalid:${port}/hook`;
      return {
        post: async () => {
          const outcome = await client.postPinned({
            url,
            address: LOOPBACK,
            body: BODY,
            headers: HEADERS,
          });
          if (!outcome.ok) throw outcome.error;
          return outcome.status;
        },
        close: () => client.close(),
      };
    },
  };
}

const pinnedOptions = (port: number, concurrency: number) => ({
  policy: createEgressPolicy({
    allowHttp: true,
    allowedPorts: [port],
    allowHosts: ["127.0.0.1/32"],
  }),
  connectionsPerAddressMax: concurrency,
});

const CANDIDATES: Candidate[] = [
  pinned("postPinned", (port, c) => new H1WebhookClient(pinnedOptions(port, c))),
  {
    name: "node:http keep-alive",
    make(port, concurrency) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
      const body = new TextEncoder().encode(BODY);
      const headers = {
        ...HEADERS,
        host: `receiver.invalid:${port}`,
        "content-length": String(body.length),
      };
      return {
        post: () =>
          new Promise((resolve, reject) => {
            const request = http.request(
              { host: "127.0.0.1", port, method: "POST", path: "/hook", agent, headers },
              (response) => {
                response.on("data", () => {});
                response.on("end", () => resolve(response.statusCode ?? 0));
              },
            );
            request.on("error", reject);
            request.end(body);
          }),
        close: () => Promise.resolve(agent.destroy()),
      };
    },
  },
  {
    name: "fetch",
    make(port) {
      const url = `http://127.0.0.1:${port}/hook`;
      return {
        post: async () => {
          const response = await fetch(url, {
            method: "POST",
            body: BODY,
            headers: HEADERS,
            redirect: "manual",
          });
          await response.arrayBuffer();
          return response.status;
        },
        close: () => Promise.resolve(),
      };
    },
  },
];

async function main() {
  const runtime = runtimeInfo();
  const seconds = flags.number("seconds", 2);
  const rounds = flags.number("rounds", 3);
  const levels = flags.string("concurrency", "1,32").split(",").map(Number);
  const json = flags.has("json");
  say(`webhook POST client bench on ${runtime.name} ${runtime.version}`);
  say(
    `  body ${BODY.length} B, ${rounds} rounds of ${seconds} s, concurrency ${levels.join(", ")}`,
  );
  const receiver = await startReceiver();
  say(`  receiver ${receiver.url} (child pid ${receiver.pid})`);
  const results: Record<string, Record<string, number>> = {};
  try {
    for (const concurrency of levels) {
      say(`  concurrency ${concurrency}:`);
      const samples = new Map<string, number[]>(CANDIDATES.map((c) => [c.name, []]));
      for (let round = 1; round <= rounds; round++) {
        const line: string[] = [];
        for (const candidate of CANDIDATES) {
          const rate = await run(candidate, receiver.port, concurrency, seconds);
          samples.get(candidate.name)!.push(rate);
          line.push(`${candidate.name} ${count(rate)}`);
        }
        say(`    .. round ${round}: ${line.join(", ")} POST/s`);
      }
      const rates: Record<string, number> = {};
      for (const [name, values] of samples) {
        rates[name] = median(values);
        say(`    ${name.padEnd(22)} ${count(rates[name]).padStart(8)} POST/s (median)`);
      }
      const ours = rates["postPinned"];
      say(`    postPinned / node:http ratio ${ratio(ours / rates["node:http keep-alive"])}`);
      say(`    postPinned / fetch     ratio ${ratio(ours / rates["fetch"])}`);
      results[`c${concurrency}`] = Object.fromEntries(
        Object.entries(rates).map(([name, rate]) => [name, round(rate)]),
      );
    }
  } finally {
    receiver.stop();
  }
  if (json) console.log(JSON.stringify({ runtime: runtime.name, seconds, rounds, results }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Warms up (connections, JIT), then counts completed POSTs over `seconds`. */
async function run(candidate: Candidate, port: number, concurrency: number, seconds: number) {
  const { post, close } = candidate.make(port, concurrency);
  try {
    for (let i = 0; i < 500; i++) await post();
    let done = 0;
    const startMs = performance.now();
    const endMs = startMs + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < endMs) {
          const status = await post();
          if (status !== 200) throw new Error(`${candidate.name}: status ${status}`);
          done++;
        }
      }),
    );
    return done / ((performance.now() - startMs) / 1000);
  } finally {
    await close();
  }
}

async function startReceiver() {
  const script = new URL(import.meta.url).pathname;
  const args = runtimeInfo().name === "deno"
    ? ["run", "-A", script, "--receiver"]
    : [script, "--receiver"];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`Receiver exited with ${code}`)));
    lines.once("line", (line) => resolve(JSON.parse(line).port));
  });
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: () => child.kill("SIGTERM"),
  };
}

async function serveReceiver() {
  const handle = async (request: Request) => {
    await request.arrayBuffer();
    return new Response("ok");
  };
  const g = globalThis as unknown as {
    Deno?: { serve(options: object, handler: typeof handle): unknown };
    Bun?: { serve(options: object): { port: number } };
  };
  const ready = (port: number) => console.log(JSON.stringify({ port }));
  if (g.Deno) {
    g.Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      onListen: (a: { port: number }) => ready(a.port),
    }, handle);
  } else {
    ready(g.Bun!.serve({ hostname: "127.0.0.1", port: 0, fetch: handle, idleTimeout: 60 }).port);
  }
  await new Promise(() => {});
}

if (flags.has("receiver")) {
  await serveReceiver();
} else {
  await main();
}
