// Prometheus's own parser and linter, `promtool check metrics`, for the metrics tests.
// scripts/install.sh unpacks it from Debian's `prometheus` package into .tools/prometheus/
// (root on Debian only; nothing is installed as a service); elsewhere the check says why it
// is skipped and the strict parser of prom_parse.ts still runs.
import { existsSync } from "node:fs";
import { spawnSync } from "node:child_process";

const BUNDLED = new URL("../../.tools/prometheus/usr/bin/promtool", import.meta.url).pathname;

function find(): string | undefined {
  if (existsSync(BUNDLED)) return BUNDLED;
  const which = spawnSync("which", ["promtool"], { encoding: "utf8" });
  return which.status === 0 ? which.stdout.trim() : undefined;
}

const promtool = find();
let told = false;

/** Undefined when promtool accepts `exposition` (parses and lints clean); otherwise what
 * it said. Skips (answers undefined) when promtool is absent, saying so once. */
export function promtoolProblems(exposition: string): string | undefined {
  if (!promtool) {
    if (!told) {
      console.log(
        "promtool check skipped: promtool not found (scripts/install.sh unpacks it " +
          "from Debian's prometheus package when run as root on Debian)",
      );
      told = true;
    }
    return undefined;
  }
  const r = spawnSync(promtool, ["check", "metrics"], { input: exposition, encoding: "utf8" });
  return r.status === 0 ? undefined : `promtool exit ${r.status}: ${r.stdout}${r.stderr}`;
}
