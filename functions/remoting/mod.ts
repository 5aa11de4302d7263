// The RocketMQ remoting front end: the NameServer role and the broker role on their own
// TCP ports, over one core (docs/remoting.md). The entry file (runtime/main.ts) hands in the
// core, the platform's TCP listener and the settings; this module builds the rest.
import type { ApiKeyConfig } from "../../runtime/protocol/types.ts";
import { Authenticator } from "../auth.ts";
import { RemotingAuth } from "./auth.ts";
import { BrokerRole } from "./broker_role.ts";
import type { RemotingCore } from "./headers.ts";
import { namesrvHandler, type NamesrvRoute } from "./namesrv.ts";
import { type RemotingLog, RemotingServer, type RemotingSocket } from "./server.ts";

export interface TcpListener {
  readonly port: number;
  close(): Promise<void>;
}

export interface RemotingOptions {
  core: RemotingCore;
  apiKeys: ApiKeyConfig[];
  log: RemotingLog;
  listen: (
    options: { hostname: string; port: number },
    onSocket: (socket: RemotingSocket) => void,
  ) => Promise<TcpListener>;
  host: string;
  /** Host the NameServer gives clients for the broker role ("" = host, or loopback). */
  advertisedHost: string;
  namesrvPort: number;
  remotingPort: number;
  brokerName: string;
  clusterName: string;
  /** The store host records carry (offset message ids). */
  storeHost: { ip: Uint8Array; port: number };
  autoCreateTopics: boolean;
  autoCreateGroups: boolean;
  defaultTopicQueueNums: number;
  frameBytesMax: number;
  idleTimeoutMs: number;
  connectionsMax: number;
  inFlightMax: number;
  /** POP receipts remembered for remoting clients (remotingPopHandlesMax). */
  popHandlesMax: number;
  /** Subscriptions remembered from heartbeats: a Java consumer's tags per (group, topic). */
  subscriptionsMax: number;
  /** The NameServer's broker groups; default: this broker alone (its topics, its remoting
   * address). The hook for routes over several groups (the KV route table's entries carry
   * `remotingAddress`). */
  routes?: (self: () => Promise<NamesrvRoute>) => Promise<NamesrvRoute[]>;
}

export interface RemotingFront {
  /** host:port of each role, as clients reach them. */
  namesrvAddress: string;
  brokerAddress: string;
  close(): Promise<void>;
}

export async function startRemoting(o: RemotingOptions): Promise<RemotingFront> {
  const auth = new RemotingAuth(o.apiKeys, await Authenticator.create(o.apiKeys));
  const limits = {
    log: o.log,
    frameBytesMax: o.frameBytesMax,
    idleTimeoutMs: o.idleTimeoutMs,
    connectionsMax: o.connectionsMax,
    inFlightMax: o.inFlightMax,
  };
  const role = new BrokerRole({
    core: o.core,
    auth,
    storeHost: o.storeHost,
    autoCreateGroups: o.autoCreateGroups,
    subscriptionsMax: o.subscriptionsMax,
    popHandlesMax: o.popHandlesMax,
  });
  const brokerServer = new RemotingServer({
    ...limits,
    role: "broker",
    handler: role.handle,
    onClose: (conn) => role.connectionClosed(conn),
  });
  const brokerListener = await o.listen(
    { hostname: o.host, port: o.remotingPort },
    (s) => brokerServer.accept(s),
  ).catch((err) => {
    throw listenError("broker", o.host, o.remotingPort, "MQ_REMOTING_PORT", err);
  });
  const host = o.advertisedHost || (o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host);
  const brokerAddress = `${host}:${brokerListener.port}`;
  const namesrvServer = new RemotingServer({
    ...limits,
    role: "namesrv",
    handler: namesrvHandler({
      routes: async () => {
        const self = async (): Promise<NamesrvRoute> => ({
          cluster: o.clusterName,
          brokerName: o.brokerName,
          brokerAddrs: { "0": brokerAddress },
          topics: await o.core.listTopics(),
        });
        return o.routes ? o.routes(self) : [await self()];
      },
      createTopic: o.autoCreateTopics ? (name) => o.core.upsertTopic(name, {}) : undefined,
      defaultTopicQueueNums: o.defaultTopicQueueNums,
      auth,
    }),
  });
  let namesrvListener: TcpListener;
  try {
    namesrvListener = await o.listen(
      { hostname: o.host, port: o.namesrvPort },
      (s) => namesrvServer.accept(s),
    );
  } catch (err) {
    await brokerListener.close();
    throw listenError("NameServer", o.host, o.namesrvPort, "MQ_NAMESRV_PORT", err);
  }
  return {
    namesrvAddress: `${host}:${namesrvListener.port}`,
    brokerAddress,
    async close() {
      // A listener's close settles once its last connection has gone: stop accepting, then
      // close the connections, then wait.
      const closing = Promise.all([namesrvListener.close(), brokerListener.close()]);
      namesrvServer.closeAll();
      brokerServer.closeAll();
      await closing;
    },
  };
}

function listenError(role: string, host: string, port: number, env: string, cause: unknown) {
  return new Error(
    `Cannot listen on ${host}:${port} for the remoting ${role} role (${env}): ${
      (cause as Error)?.message ?? cause
    }; choose another port (0 picks a free one) or set MQ_REMOTING=false`,
    { cause },
  );
}
