// The route table in Deno KV (RocketMQ's NameServer role, reference/rocketmq.md §14):
// each broker writes its broker group, address (and its https:// URL when it serves TLS)
// and topics under
// ["mq", "routes", cluster, brokerName] now and every routeHeartbeatMs (30 s); readers
// ignore, and sweep, entries unseen for routeExpiryMs (120 s). Values are our own bytes
// (UTF-8 JSON in a Uint8Array), so Deno and Bun read each other's entries. A graceful
// stop removes the entry (UNREGISTER_BROKER).
import type { BrokerConfig } from "./config.ts";
import type { Logger } from "./log.ts";
import type { TopicConfig } from "./protocol/types.ts";
import type { KvOpenOptions, KvPort } from "./platform/kv_port.ts";
import { decodeRoute, encodeRoute, type RouteEntry, ROUTES_PREFIX } from "./protocol/routes.ts";

/** The HTTP API's base URL at `address`: https:// when the broker serves TLS. */
export function httpUrlOf(
  config: Pick<BrokerConfig, "httpTlsCertFile">,
  address: string,
): string {
  return `${config.httpTlsCertFile ? "https" : "http"}://${address}`;
}

export interface RouteRegistration {
  /** Ends the heartbeat; removes the entry unless `remove` is false (a replicated group's
   * deposed master must not delete its successor's entry). */
  stop(options?: { remove?: boolean }): Promise<void>;
}

export async function startRouteRegistration(options: {
  config: BrokerConfig;
  address: string;
  /** The remoting port's host:port, when remoting is on. */
  remotingAddress?: string;
  broker: { topicConfigs(): TopicConfig[]; readonly idPrefix?: string };
  log: Logger;
  nowMs: () => number;
  /** The platform's. */
  openKv: (pathOrUrl: string, options: KvOpenOptions) => Promise<KvPort>;
  /** Leadership epoch of this master (fencing token for route readers); 0 on its own. */
  epoch?: number;
  /** Checked before every write: a master that lost its lease stops registering. */
  stillValid?: () => boolean;
}): Promise<RouteRegistration> {
  const { config, log } = options;
  const kv = await options.openKv(config.kvPath, { accessToken: config.kvAccessToken });
  const key = [...ROUTES_PREFIX, config.brokerClusterName, config.brokerName];
  const register = async () => {
    if (options.stillValid && !options.stillValid()) return;
    const epoch = options.epoch ?? 0;
    const entry: RouteEntry = {
      cluster: config.brokerClusterName,
      brokerName: config.brokerName,
      address: options.address,
      // Readers take it through brokerUrl(); a plain-HTTP entry stays as it was.
      ...(config.httpTlsCertFile && { url: httpUrlOf(config, options.address) }),
      ...(options.remotingAddress && { remotingAddress: options.remotingAddress }),
      ...(options.broker.idPrefix && { idPrefix: options.broker.idPrefix }),
      epoch,
      topics: options.broker.topicConfigs().map((
        { name, readQueueNums, writeQueueNums, perm },
      ) => ({ name, readQueueNums, writeQueueNums, perm })),
      updatedAtMs: options.nowMs(),
    };
    await registerChecked(kv, key, entry, log, config.routeExpiryMs);
  };
  await register();
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = register().catch((err) =>
      log("warn", "route registration failed; will retry", { err: String(err) })
    );
  }, config.routeHeartbeatMs);
  return {
    async stop({ remove = true } = {}) {
      clearInterval(timer);
      await running;
      if (remove) {
        await kv.delete(key).catch((err) =>
          log("warn", "route removal failed", { err: String(err) })
        );
      }
      kv.close();
    },
  };
}

/** Compare-and-set attempts of one registration before it waits for the next heartbeat. */
const REGISTER_CAS_ATTEMPTS = 3;

/**
 * Writes the entry with compare-and-set, never over an entry of a higher epoch: a deposed
 * master's late heartbeat (its lease check passed just before it lost the lease) cannot
 * replace its successor's registration (an expired one may be replaced: a group restarted
 * on its own). False when it was not written.
 */
export async function registerChecked(
  kv: KvPort,
  key: readonly string[],
  entry: RouteEntry,
  log: Logger,
  expiryMs = Infinity,
): Promise<boolean> {
  for (let attempt = 0; attempt < REGISTER_CAS_ATTEMPTS; attempt++) {
    const current = await kv.get(key);
    const held = current ? decodeRoute(current.value) : undefined;
    const live = held !== undefined && held.updatedAtMs + expiryMs > entry.updatedAtMs;
    if (held && live && held.epoch > entry.epoch) {
      log("warn", "route registration skipped: a master of a higher epoch registered", {
        epoch: entry.epoch,
        registered: held.epoch,
      });
      return false;
    }
    const result = await kv.checkAndSet(key, current?.versionstamp ?? null, encodeRoute(entry));
    if (result.ok) return true;
  }
  return false;
}
