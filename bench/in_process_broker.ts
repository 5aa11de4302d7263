// A Broker opened in the bench's own process on the platform it runs on (the in-process
// benches: bench/http/produce_alloc_bench.ts, bench/runtime/topics_cpu_bench.ts).
import process from "node:process";
import { loadBrokerConfig } from "../runtime/config.ts";
import { Broker } from "../runtime/broker.ts";
import { pickPlatform } from "../runtime/platform/pick.ts";
import { runtimeInfo } from "./support.ts";

/** `env`: the broker's settings (DATA_DIR at least). */
export async function openBenchBroker(env: Record<string, string>) {
  const config = loadBrokerConfig({}, { PORT: "0", ...env }, []);
  const platform = await pickPlatform();
  const rt = runtimeInfo();
  const broker = await Broker.open({
    config,
    files: platform.files,
    nowMs: platform.clock.wallMs,
    log: () => {},
    runtime: `${rt.name} ${rt.version}`,
    pid: process.pid,
    random: Math.random,
    bodyText: platform.bodyText,
    openSqlite: platform.openSqlite,
  });
  return { broker, config };
}
