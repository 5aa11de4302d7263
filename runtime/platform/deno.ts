import process from "node:process";
import { NodeFilePort } from "../../storage/node_fs_port.ts";
import { openNodeSqlite } from "../../storage/metadata/node_sqlite.ts";
import { isKvConnectUrl, type KvLike, type KvOpenOptions, KvPortError, wrapKv } from "./kv_port.ts";
import { isEtcdUrl, openEtcdKv } from "./etcd_port.ts";
import type { BodyText, FetchHandler, HttpServer, Platform, ServeOptions } from "./platform.ts";
import { guardedServe, listenNodeTcp, systemClock } from "./portable.ts";

// deno-lint-ignore no-explicit-any
const Deno = (globalThis as any).Deno;

export function denoPlatform(): Platform {
  return {
    name: "deno",
    version: Deno.version.deno,
    files: new NodeFilePort(),
    clock: systemClock,
    bodyText: lenientThenScan(),
    serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer> {
      // Deno.serve takes h2c on a plain port as it is, and has no header, idle, connection
      // or body limit options: the guard (conn_guard.ts) enforces the first three,
      // functions/body.ts the body limits.
      return guardedServe(options, (address, tls) =>
        new Promise((resolve) => {
          const server = Deno.serve({
            ...address,
            ...tls,
            onListen: (addr: { port: number }) =>
              resolve({ port: addr.port, close: () => server.shutdown() }),
          }, handler);
        }));
    },
    listenTcp: listenNodeTcp,
    listenTcpConnections: listenNodeTcp,
    openKv,
    openSqlite: openNodeSqlite,
    fetchTrusting(caPem) {
      // caCerts adds to the roots Deno trusts (webpki's, or the system's with
      // DENO_TLS_CA_STORE); one client, so connections are pooled across calls.
      if (typeof Deno.createHttpClient !== "function") {
        // Some Deno-based edge hosts leave it out: say so at start, not on the first call.
        throw new Error(
          "This Deno has no Deno.createHttpClient, so it cannot trust MQ_BROKER_CA_FILE: give " +
            "the brokers a certificate from a public CA and unset it",
        );
      }
      const client = Deno.createHttpClient({ caCerts: [caPem] });
      const trusting: typeof fetch = (input, init) => {
        const withClient: RequestInit & { client: unknown } = { ...init, client };
        return fetch(input, withClient);
      };
      return Object.assign(trusting, { close: () => client.close() });
    },
    collectGarbage: exposedGc(),
  };
}

/** V8's last-resort collection (it shrinks the young generation and frees pooled pages;
 * a regular one does not), when Deno runs with --v8-flags=--expose-gc. */
function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: (options: object) => void }).gc;
  if (typeof gc !== "function") return undefined;
  return () => gc({ type: "major", execution: "sync", flavor: "last-resort" });
}

// Lenient, then a scan for U+FFFD: a fatal decode of a 1 KiB body costs Deno about twice
// as much (bench/README.md). Bytes that are not UTF-8 decode to U+FFFD, so both kinds
// of body go out as base64, as on Bun.
function lenientThenScan(): BodyText {
  const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
  return (body) => {
    const text = utf8.decode(body);
    return text.includes("\uFFFD") ? undefined : text;
  };
}

/** Deno.openKv (etcd_port.ts for etcd://); for a KV Connect URL, Deno reads the token from
 * DENO_KV_ACCESS_TOKEN. */
async function openKv(pathOrUrl?: string, options: KvOpenOptions = {}) {
  if (pathOrUrl !== undefined && isEtcdUrl(pathOrUrl)) return await openEtcdKv(pathOrUrl);
  if (typeof Deno.openKv !== "function") {
    throw new KvPortError("Deno.openKv is missing: run with --unstable-kv");
  }
  if (pathOrUrl !== undefined && isKvConnectUrl(pathOrUrl) && options.accessToken !== undefined) {
    const envToken = process.env.DENO_KV_ACCESS_TOKEN;
    if (envToken !== options.accessToken) {
      throw new KvPortError(
        `Cannot open ${pathOrUrl} on Deno with this access token: Deno.openKv uses ` +
          `DENO_KV_ACCESS_TOKEN from the environment, which is ${
            envToken === undefined ? "unset" : "a different token"
          }; set it in the environment of this process`,
      );
    }
  }
  const kv: KvLike = await Deno.openKv(pathOrUrl);
  return wrapKv(kv, pathOrUrl ?? "the default KV database");
}
