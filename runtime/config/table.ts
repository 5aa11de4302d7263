// The settings table: every row, grouped by area. BrokerConfig's fields, their types and
// defaults derive from these rows; so do --help and docs/configuration.md (render.ts).
import type { Setting } from "../protocol/setting.ts";
import type { StoreConfig } from "../../storage/config.ts";
import { SERVER_SETTINGS } from "./server_settings.ts";
import { STORE_SETTINGS } from "./store_settings.ts";
import { CONSUMER_SETTINGS } from "./consumer_settings.ts";
import { TIME_SETTINGS } from "./time_settings.ts";
import { WEBHOOK_SETTINGS } from "./webhook_settings.ts";
import { EGRESS_SETTINGS } from "./egress_settings.ts";
import { HA_SETTINGS } from "./ha_settings.ts";
import { TRANSACTION_SETTINGS } from "./transaction_settings.ts";
import { REMOTING_SETTINGS } from "./remoting_settings.ts";
import { QSTASH_SETTINGS } from "./qstash_settings.ts";
import { GRPC_SETTINGS } from "../protocol/grpc_settings.ts";
import { CLUSTER_ROUTER_SETTINGS } from "./cluster_router_settings.ts";

/** The broker's settings by area, in the order --help and the docs list them. */
export const SETTING_AREAS = [
  { title: "Broker process and HTTP API", rows: SERVER_SETTINGS },
  { title: "Message store", rows: STORE_SETTINGS },
  { title: "Consumption", rows: CONSUMER_SETTINGS },
  { title: "Delays and timers", rows: TIME_SETTINGS },
  { title: "Webhook push", rows: WEBHOOK_SETTINGS },
  { title: "Webhook delivery: read-ahead, HTTP client, DNS", rows: EGRESS_SETTINGS },
  { title: "Replication", rows: HA_SETTINGS },
  { title: "Transactional messages", rows: TRANSACTION_SETTINGS },
  { title: "RocketMQ remoting (NameServer and broker roles)", rows: REMOTING_SETTINGS },
  { title: "QStash-compatible API", rows: QSTASH_SETTINGS },
  { title: "RocketMQ 5 gRPC front end", rows: GRPC_SETTINGS },
  { title: "Cluster router (functions across broker groups)", rows: CLUSTER_ROUTER_SETTINGS },
] as const;

/** Every setting a user can change. */
export const SETTINGS: readonly Setting[] = SETTING_AREAS.flatMap((area): readonly Setting[] =>
  area.rows
);

type Row = (typeof SETTING_AREAS)[number]["rows"][number];
type ValueOf<R> = R extends Setting<string, infer T> ? T : never;
type StoreRow = Extract<Row, { name: `store.${string}` }>;

export type BrokerConfig =
  & { -readonly [R in Exclude<Row, StoreRow> as R["name"]]: ValueOf<R> }
  & { store: StoreConfig };

/** The store fields as the table declares them; checked against StoreConfig below. */
type StoreFields = {
  [R in StoreRow as R["name"] extends `store.${infer K}` ? K : never]: ValueOf<R>;
};
// Both ways: a StoreConfig field without a row, a row StoreConfig lacks, or a row of the
// wrong type fails to compile here.
type SameKeys<A, B> = [Exclude<keyof A, keyof B> | Exclude<keyof B, keyof A>] extends [never] ? true
  : false;
const _storeRowsAreStoreConfig: SameKeys<StoreFields, StoreConfig> = true;
const _storeRowTypes: StoreFields extends StoreConfig ? true : false = true;

function copy<T>(value: T): T {
  return Array.isArray(value) ? [...value] as T : value;
}

/** Every setting at its default; kvPath, advertisedAddress and haAdvertisedHost stay
 * empty until loadBrokerConfig derives them from the settings they follow. */
export function defaultBrokerConfig(dataDir = "./data"): BrokerConfig {
  const config: Record<string, unknown> = {};
  const store: Record<string, unknown> = {};
  for (const row of SETTINGS) {
    if (row.name.startsWith("store.")) {
      if (row.default !== undefined) store[row.name.slice(6)] = copy(row.default);
    } else config[row.name] = copy(row.default);
  }
  store.storePathRootDir = `${dataDir}/store`;
  config.dataDir = dataDir;
  config.store = store;
  return config as BrokerConfig;
}
