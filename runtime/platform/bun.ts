import { NodeFilePort } from "../../storage/node_fs_port.ts";
import type { FetchHandler, HttpServer, Platform, ServeOptions } from "./platform.ts";

// deno-lint-ignore no-explicit-any
const Bun = (globalThis as any).Bun;

export function bunPlatform(): Platform {
  return {
    name: "bun",
    version: Bun.version,
    files: new NodeFilePort(),
    serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer> {
      // Bun closes requests idle for 10 s by default, which would cut long polls.
      const server = Bun.serve({
        hostname: options.hostname,
        port: options.port,
        idleTimeout: Math.min(255, options.idleTimeoutSeconds),
        maxRequestBodySize: options.maxRequestBodyBytes,
        fetch: handler,
      });
      return Promise.resolve({ port: server.port, close: () => server.stop() });
    },
  };
}
