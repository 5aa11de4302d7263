// A workaround for Deno 2.9.6, whose node:http2 server aborts the whole process inside
// nghttp2 when a client's GOAWAY arrives after a few hundred streams on the connection
// ("nghttp2_session.c:2402: find_stream_on_goaway_func: Assertion `stream->closed_next ==
// NULL' failed", or "free(): invalid pointer"; denoland/deno#36788). Every gRPC client
// sends GOAWAY when it closes a channel, so without this a client could stop the broker.
// The shield listens on the public gRPC port and relays each connection to the grpc-js
// server on a loopback port, dropping the GOAWAY frames clients send: the server then sees
// the connection end as a plain close, which it survives. It also terminates TLS, so the
// frames can be read. Used on Deno only (the entry files decide); docs/grpc.md.
import type net from "node:net";
import { nodeNet, nodeTls } from "../../runtime/protocol/node_builtins.ts";
import { Buffer } from "node:buffer";

const PREFACE_BYTES = 24; // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
const FRAME_HEADER_BYTES = 9;
const FRAME_GOAWAY = 0x7;

/** Client-to-server HTTP/2 bytes with GOAWAY frames left out; other bytes unchanged. */
export class GoawayFilter {
  #preface = PREFACE_BYTES;
  #header = Buffer.alloc(FRAME_HEADER_BYTES);
  #headerHave = 0;
  #bodyLeft = 0;
  #dropping = false;
  /** GOAWAY frames dropped so far. */
  dropped = 0;

  push(chunk: Uint8Array): Uint8Array {
    const out: Uint8Array[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#preface > 0) {
        const n = Math.min(this.#preface, chunk.length - i);
        out.push(chunk.subarray(i, i + n));
        this.#preface -= n;
        i += n;
      } else if (this.#bodyLeft > 0) {
        const n = Math.min(this.#bodyLeft, chunk.length - i);
        if (!this.#dropping) out.push(chunk.subarray(i, i + n));
        this.#bodyLeft -= n;
        i += n;
      } else {
        const n = Math.min(FRAME_HEADER_BYTES - this.#headerHave, chunk.length - i);
        this.#header.set(chunk.subarray(i, i + n), this.#headerHave);
        this.#headerHave += n;
        i += n;
        if (this.#headerHave < FRAME_HEADER_BYTES) break;
        const h = this.#header;
        this.#headerHave = 0;
        this.#bodyLeft = (h[0] << 16) | (h[1] << 8) | h[2];
        this.#dropping = h[3] === FRAME_GOAWAY;
        if (this.#dropping) this.dropped++;
        else out.push(Buffer.from(h));
      }
    }
    return out.length === 1 ? out[0] : Buffer.concat(out);
  }
}

export interface Shield {
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (TLS when given) and relays to the loopback port `target`. */
export function startGoawayShield(options: {
  host: string;
  port: number;
  /** The loopback port to relay to; asked on each connection (the first one starts it). */
  target: () => Promise<number>;
  tls?: { cert: Buffer; key: Buffer };
}): Promise<Shield> {
  const sockets = new Set<net.Socket>();
  const accept = (client: net.Socket) => {
    // Bytes that come before the target is known wait in the socket (paused).
    client.pause();
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    options.target().then((port) => {
      if (client.destroyed) return;
      relay(client, port);
      client.resume();
    }, () => client.destroy());
  };
  const relay = (client: net.Socket, port: number) => {
    const filter = new GoawayFilter();
    const upstream = nodeNet().connect({ host: "127.0.0.1", port });
    sockets.add(client).add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on("data", (chunk: Buffer) => {
      const bytes = filter.push(chunk);
      if (bytes.length > 0 && !upstream.write(bytes)) client.pause();
    });
    upstream.on("drain", () => client.resume());
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end).on("end", end);
    upstream.on("close", end).on("error", end);
  };
  const server = options.tls
    ? nodeTls().createServer(
      { cert: options.tls.cert, key: options.tls.key, ALPNProtocols: ["h2"] },
      accept,
    )
    : nodeNet().createServer(accept);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      const address = server.address() as net.AddressInfo;
      resolve({
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}
