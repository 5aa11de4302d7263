// Builds a BrokerConfig from its three sources: a parsed config file, then the environment,
// then command-line flags (`--port 8081` or `--port=8081`); a later source wins. Every
// value passes its row's check, whatever its source; then the checks across settings.
import { ConfigError, type Setting } from "../protocol/setting.ts";
import { type BrokerConfig, defaultBrokerConfig, SETTINGS } from "./table.ts";

const BY_NAME = new Map(SETTINGS.map((row) => [row.name, row]));
const BY_FLAG = new Map(SETTINGS.map((row) => [row.flag, row]));
const HOUR_MS = 3_600_000;

export function loadBrokerConfig(
  file: Record<string, unknown>,
  env: Record<string, string | undefined>,
  args: string[],
): BrokerConfig {
  const raw = new Map<string, unknown>();
  for (const [name, value] of fileEntries(file)) raw.set(name, known(name).check(value));
  for (const row of SETTINGS) {
    const text = env[row.env];
    if (text !== undefined && text !== "") raw.set(row.name, row.fromText(text));
  }
  for (const [row, text] of flagEntries(args)) raw.set(row.name, row.fromText(text));

  const dataDir = (raw.get("dataDir") ?? "./data") as string;
  const config = defaultBrokerConfig(dataDir);
  const fields = config as unknown as Record<string, unknown>;
  const store = config.store as unknown as Record<string, unknown>;
  for (const [name, value] of raw) {
    if (name.startsWith("store.")) store[name.slice(6)] = value;
    else if (name !== "dataDir") fields[name] = value;
  }
  if (!config.kvPath) config.kvPath = `${dataDir}/kv.sqlite`;
  if (!config.advertisedAddress) config.advertisedAddress = `${config.host}:${config.port}`;
  // An ephemeral HTTP port (tests, benchmarks) makes the gRPC port ephemeral too, unless set.
  if (!raw.has("grpcPort") && config.port === 0) config.grpcPort = 0;
  if (!config.haAdvertisedHost) config.haAdvertisedHost = config.haHost;
  if (!config.store.storePathRootDir) config.store.storePathRootDir = `${dataDir}/store`;
  checkAcross(config);
  return config;
}

function known(name: string): Setting {
  const row = BY_NAME.get(name);
  if (!row) throw new ConfigError(`Unknown setting ${name}`, name);
  return row;
}

/** The file's entries by setting name: the `store` object's keys become store.*. */
function fileEntries(file: Record<string, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const [key, value] of Object.entries(file)) {
    if (key === "store" && value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) out.push([`store.${k}`, v]);
    } else out.push([key, value]);
  }
  return out;
}

/** The flags' rows and texts; `--config <file>` is main.ts's, skipped here. */
function flagEntries(args: string[]): [Setting, string][] {
  const out: [Setting, string][] = [];
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--config") {
      if (inline === undefined) i++;
      continue;
    }
    const row = BY_FLAG.get(flag);
    if (!row) throw new ConfigError(`Unknown flag ${flag}; run with --help for the list`);
    const text = inline ?? args[++i];
    if (text === undefined) throw new ConfigError(`Flag ${flag} needs a value`, row.name);
    out.push([row, text]);
  }
  return out;
}

/** Rules that involve more than one setting. */
function checkAcross(c: BrokerConfig) {
  if (c.timerRollWindowMs >= c.store.fileReservedTime * HOUR_MS) {
    throw new ConfigError(
      `timerRollWindowMs must be positive and below fileReservedTime, or a waiting timer's message could be deleted: ${c.timerRollWindowMs} >= ${
        c.store.fileReservedTime * HOUR_MS
      } ms`,
      "timerRollWindowMs",
      c.timerRollWindowMs,
    );
  }
  for (
    const [a, b] of [["httpTlsCertFile", "httpTlsKeyFile"], [
      "grpcTlsCertFile",
      "grpcTlsKeyFile",
    ]] as const
  ) {
    if ((c[a] === "") !== (c[b] === "")) {
      const [set, unset] = c[a] === "" ? [b, a] : [a, b];
      throw new ConfigError(
        `${set} needs ${unset} too (TLS takes a certificate and its key)`,
        unset,
        "",
      );
    }
  }
  if (c.haMode === "cluster" && !/^(https?|etcd):\/\//.test(c.kvPath)) {
    throw new ConfigError(
      `haMode cluster needs kvPath to be a KV Connect URL or an etcd://host:port[,host:port] list shared by the group (a local KV file cannot be shared), got ${
        JSON.stringify(c.kvPath)
      }`,
      "kvPath",
      c.kvPath,
    );
  }
}
