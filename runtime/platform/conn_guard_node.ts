// The connection guard's front on node:net, or node:tls for HTTPS (conn_guard.ts): the same
// code on Deno and Bun.
import type * as NodeNet from "node:net";
import type { Front, FrontOptions } from "./conn_guard.ts";
// Loaded on first use: a process that listens on no raw TCP port never loads them.
import { nodeNet, nodeTls } from "../protocol/node_builtins.ts";

export function listenNodeFront(options: FrontOptions): Promise<Front> {
  const { tracker } = options;
  const onClient = (client: NodeNet.Socket) => {
    // Called by the sweep or on close, never before `upstream` below is set.
    const c = tracker.admit(() => {
      client.destroy();
      upstream.destroy();
    });
    if (!c) {
      client.destroy();
      return;
    }
    const upstream = nodeNet().connect({
      port: options.upstreamPort,
      host: "127.0.0.1",
      noDelay: true,
    });
    client.on("data", (chunk: Uint8Array) => {
      tracker.fromClient(c, chunk);
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on("data", (chunk: Uint8Array) => {
      tracker.fromUpstream(c, chunk);
      if (!client.write(chunk)) upstream.pause();
    });
    upstream.on("drain", () => client.resume());
    client.on("drain", () => upstream.resume());
    client.on("end", () => upstream.end());
    // The server will answer nothing more: flush what it sent, then close the client even
    // if it never sends its own FIN (a graceful shutdown waits for every client).
    upstream.on("end", () => client.end(() => client.destroy()));
    const done = () => {
      tracker.release(c);
      c.destroy();
    };
    client.on("close", done);
    upstream.on("close", done);
    client.on("error", done);
    upstream.on("error", done);
  };
  // With TLS, `client` is the decrypted stream (secureConnection): a handshake is not counted
  // until it ends, and node:tls drops one that takes longer than handshakeTimeoutMs.
  const t = options.tls;
  const server = t
    ? nodeTls().createServer(
      { cert: t.cert, key: t.key, handshakeTimeout: t.handshakeTimeoutMs, noDelay: true },
      onClient,
    )
    : nodeNet().createServer({ noDelay: true }, onClient);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const { port } = server.address() as NodeNet.AddressInfo;
      resolve({
        port,
        close() {
          server.close();
          return Promise.resolve();
        },
      });
    });
  });
}
