import { NodeFilePort } from "../../storage/node_fs_port.ts";
import type { FetchHandler, HttpServer, Platform, ServeOptions } from "./platform.ts";

// deno-lint-ignore no-explicit-any
const Deno = (globalThis as any).Deno;

export function denoPlatform(): Platform {
  return {
    name: "deno",
    version: Deno.version.deno,
    files: new NodeFilePort(),
    serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer> {
      return new Promise((resolve) => {
        const server = Deno.serve({
          hostname: options.hostname,
          port: options.port,
          onListen: (addr: { port: number }) =>
            resolve({ port: addr.port, close: () => server.shutdown() }),
        }, handler);
      });
    },
  };
}
