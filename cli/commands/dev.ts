// edgemq dev: one command for a throwaway broker (QStash's `qstash-cli dev`). Starts
// runtime/main.ts under the runtime running this CLI, with a temporary data folder and a
// fresh admin token, prints the URL, the token and a curl example, and on Ctrl-C stops
// the broker and deletes the folder (unless --data-dir names one to keep).
import process from "node:process";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { defineCommand } from "citty";
import { guarded } from "../context.ts";

const BROKER = fileURLToPath(new URL("../../runtime/main.ts", import.meta.url));

function runtimeArgs(): [string, string[]] {
  const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
  return isBun ? [process.execPath, ["run", BROKER]] : [process.execPath, ["run", "-A", BROKER]];
}

function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return "dev_" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export default defineCommand({
  meta: {
    name: "dev",
    description: "Start a throwaway broker with a temp data dir and print how to use it",
  },
  args: {
    port: { type: "string", description: "HTTP port (0 picks a free one)", default: "8080" },
    "data-dir": { type: "string", description: "Keep data here instead of a temp folder" },
    open: { type: "boolean", description: "No API key: the API is open", default: false },
  },
  run: ({ args }) =>
    guarded(async () => {
      const dataDir = args["data-dir"] ?? mkdtempSync(`${tmpdir()}/edgemq-dev-`);
      const token = args.open ? undefined : newToken();
      const [bin, argv] = runtimeArgs();
      const child = spawn(bin, argv, {
        env: {
          ...process.env,
          PORT: String(args.port),
          HOST: "127.0.0.1",
          DATA_DIR: dataDir,
          MQ_LOG_LEVEL: process.env.MQ_LOG_LEVEL ?? "warn",
          MQ_API_KEYS: token ? JSON.stringify([{ key: token, name: "dev", admin: true }]) : "[]",
        },
        // Piped, not inherited: a broker outliving a killed CLI holds no pipe of the caller.
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stderr!.on("data", (chunk) => process.stderr.write(chunk));
      // Handlers first: a Ctrl-C while the broker starts stops it too.
      const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
      let stopping = false;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        process.stderr.write("stopping the broker…\n");
        child.kill("SIGTERM");
      };
      process.on("SIGINT", stop);
      process.on("SIGTERM", stop);
      process.stderr.write(`starting a broker in ${dataDir}…\n`);
      const url = await new Promise<string>((resolve, reject) => {
        let buffered = "";
        child.stdout!.setEncoding("utf8");
        child.stdout!.on("data", (chunk: string) => {
          buffered += chunk;
          for (const line of buffered.split("\n").slice(0, -1)) {
            try {
              const v = JSON.parse(line);
              if (v.event === "listening") resolve(v.url);
            } catch { /* not a JSON line */ }
          }
          buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
        });
        child.on("exit", (code) =>
          reject(new Error(`the broker exited (code ${code}) before listening`)));
      });
      const auth = token ? ` -H "Authorization: Bearer ${token}"` : "";
      process.stdout.write(
        [
          `edgemq dev broker at ${url}`,
          `  EDGEMQ_URL=${url}`,
          ...(token ? [`  EDGEMQ_TOKEN=${token}`] : []),
          `  dashboard: ${url}/dashboard${token ? `#token=${token}` : ""}`,
          "",
          "Try:",
          `  curl -X POST${auth} -d 'hello' ${url}/v1/topics/demo/messages`,
          `  curl${auth} '${url}/v1/topics/demo/queues/0/messages?offset=0'`,
          "",
          "Ctrl-C stops it" + (args["data-dir"] ? "." : " and deletes the data."),
          "",
        ].join("\n"),
      );
      process.stdout.write(JSON.stringify({ event: "dev-ready", url, token, dataDir }) + "\n");
      const code = await exited;
      if (!args["data-dir"]) {
        rmSync(dataDir, { recursive: true, force: true });
      }
      process.stderr.write(`broker stopped${args["data-dir"] ? "" : "; data deleted"}\n`);
      process.exit(stopping ? 0 : code ?? 1);
    }),
});
