import type { Platform } from "./platform.ts";

/**
 * The Platform of the runtime this process runs on. Entry files call it once and pass the
 * result down; nothing else asks which runtime it is on.
 */
export async function pickPlatform(): Promise<Platform> {
  // Feature test, not name test: the bun test shim defines a Deno object without serve.
  // deno-lint-ignore no-explicit-any
  if ((globalThis as any).Deno?.serve) return (await import("./deno.ts")).denoPlatform();
  return (await import("./bun.ts")).bunPlatform();
}
