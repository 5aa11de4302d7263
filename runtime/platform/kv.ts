// Deno KV on both runtimes: `Deno.openKv` on Deno, `@deno/kv` on Bun (with the limited
// V8 serializer: Bun's own serializer writes JavaScriptCore's format). A path opens a
// local SQLite file (one process only); an http(s) URL speaks KV Connect (Deno reads the
// token from DENO_KV_ACCESS_TOKEN; @deno/kv takes it as an option). We store only
// Uint8Array values (our own encoding) so both runtimes read each other's data.
import type { RouteKv } from "../protocol/routes.ts";

export interface KvPort extends RouteKv {
  get(key: string[]): Promise<Uint8Array | null>;
  close(): void;
}

interface KvEntryLike {
  key: unknown[];
  value: unknown;
}
interface KvLike {
  get(key: string[]): Promise<{ value: unknown }>;
  set(key: string[], value: unknown): Promise<unknown>;
  delete(key: string[]): Promise<void>;
  list(selector: { prefix: string[] }): AsyncIterable<KvEntryLike>;
  close(): void;
}

export async function openKv(
  pathOrUrl: string,
  options: { accessToken?: string } = {},
): Promise<KvPort> {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  let kv: KvLike;
  if (deno?.openKv) {
    kv = await deno.openKv(pathOrUrl);
  } else {
    const mod = await import("@deno/kv");
    kv = await mod.openKv(pathOrUrl, {
      accessToken: options.accessToken,
      ...mod.makeLimitedV8Serializer(),
    }) as unknown as KvLike;
  }
  return {
    async get(key) {
      const v = (await kv.get(key)).value;
      return v instanceof Uint8Array ? new Uint8Array(v) : null;
    },
    async set(key, value) {
      await kv.set(key, value);
    },
    async delete(key) {
      await kv.delete(key);
    },
    async list(prefix) {
      const out: { key: string[]; value: Uint8Array }[] = [];
      for await (const e of kv.list({ prefix })) {
        if (e.value instanceof Uint8Array) {
          out.push({ key: e.key as string[], value: new Uint8Array(e.value) });
        }
      }
      return out;
    },
    close() {
      kv.close();
    },
  };
}
