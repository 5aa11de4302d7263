// The addresses a record carries (bornHost, storeHost): this broker stores loopback with
// its HTTP port, as the wire has no client address to give.
export interface StoreHost {
  ip: Uint8Array;
  port: number;
}

export const LOOPBACK: StoreHost = { ip: new Uint8Array([127, 0, 0, 1]), port: 0 };

/** Loopback with the port RocketMQ clients reach this broker at: the remoting port when it
 * serves one (RocketMQ's brokerIP1:listenPort, which offset message ids name), else HTTP. */
export function storeHostOf(
  config: { port: number; remotingEnable: boolean; remotingPort: number },
): StoreHost {
  const port = config.remotingEnable && config.remotingPort > 0 ? config.remotingPort : config.port;
  return { ...LOOPBACK, port };
}
