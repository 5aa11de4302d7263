import { BunFilePort } from "./bun_fs_sync.ts";
import { openSqliteOnBun } from "./bun_sqlite.ts";
import { type KvOpenOptions, KvPortError, openNodeKv } from "./kv_port.ts";
import { isEtcdUrl, openEtcdKv } from "./etcd_port.ts";
import type { BodyText, FetchHandler, HttpServer, Platform, ServeOptions } from "./platform.ts";
import { guardedServe, listenNodeTcp, systemClock } from "./portable.ts";
import { listenBunTcp } from "./bun_tcp.ts";
import { bunFetchTrusting } from "./bun_fetch.ts";

// deno-lint-ignore no-explicit-any
const Bun = (globalThis as any).Bun;

export function bunPlatform(): Platform {
  return {
    name: "bun",
    version: Bun.version,
    // Many ConsumeQueue syncs at once take one syncfs (bun_fs_sync.ts).
    files: new BunFilePort(),
    clock: systemClock,
    bodyText: fatalThenScan(),
    serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer> {
      return guardedServe(options, (address, tls) => {
        const server = Bun.serve({
          ...address,
          ...(tls ? { tls } : {}),
          // Bun's own idle limit (10 s by default) counts a long poll in flight as idle
          // and is one number for headers and keep-alive: off, the guard (conn_guard.ts)
          // times connections instead.
          idleTimeout: 0,
          maxRequestBodySize: options.maxRequestBodyBytes,
          // Without it Bun answers h2c (Deno's KV client) with "stream closed because of
          // a broken pipe"; HTTP/1.1 still works.
          ...(options.h2c ? { http2: true } : {}),
          fetch: handler,
        });
        return Promise.resolve({
          port: server.port,
          close: (o?: { force?: boolean }) => server.stop(o?.force === true),
        });
      });
    },
    listenTcp: listenNodeTcp,
    listenTcpConnections: listenBunTcp,
    openKv(pathOrUrl?: string, options: KvOpenOptions = {}) {
      if (pathOrUrl === undefined) {
        return Promise.reject(new KvPortError("Cannot open KV without a path or URL off Deno"));
      }
      if (isEtcdUrl(pathOrUrl)) return openEtcdKv(pathOrUrl);
      return openNodeKv(pathOrUrl, options.accessToken);
    },
    openSqlite: openSqliteOnBun,
    fetchTrusting: (caPem) => bunFetchTrusting(caPem),
  };
}

// Fatal, then a scan for U+FFFD: a lenient decode made Bun's scan and JSON.stringify of
// the page slower (bench/README.md); text that decoded strictly and holds no U+FFFD
// scans in a few ns. A body holding U+FFFD itself goes out as base64, as on Deno.
function fatalThenScan(): BodyText {
  const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  return (body) => {
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      return undefined; // not UTF-8
    }
    return text.includes("\uFFFD") ? undefined : text;
  };
}
