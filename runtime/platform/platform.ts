// The one port between the broker and its runtime (STYLE.md, "One port"). Only
// runtime/main.ts picks deno.ts or bun.ts; everything else receives a Platform.
import type { FilePort } from "../../storage/file_port.ts";

export interface ServeOptions {
  hostname: string;
  port: number;
  /** Seconds an idle connection may stay open; above the longest long poll. */
  idleTimeoutSeconds: number;
  /** Bun enforces this itself; on Deno functions/body.ts does. */
  maxRequestBodyBytes: number;
}

export interface HttpServer {
  readonly port: number;
  /** Stops accepting, waits for requests in flight. */
  close(): Promise<void>;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;

export interface Platform {
  readonly name: "deno" | "bun";
  readonly version: string;
  readonly files: FilePort;
  serve(options: ServeOptions, handler: FetchHandler): Promise<HttpServer>;
}
