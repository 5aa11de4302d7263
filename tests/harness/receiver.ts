// A webhook receiver on loopback for tests: every request is recorded; what it answers is
// decided per path by a script (request, how many times this path was hit before).
export interface Received {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: Uint8Array;
  at: number;
}

export type Script = (r: Received, hits: number) => Response | Promise<Response>;

export class Receiver implements AsyncDisposable {
  readonly requests: Received[] = [];
  readonly scripts = new Map<string, Script>();
  #hits = new Map<string, number>();
  #server: Deno.HttpServer;
  #hanging = new Set<() => void>();
  #waiters: { pred: () => boolean; resolve: () => void }[] = [];
  readonly url: string;

  constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const path = new URL(req.url).pathname;
        const received: Received = {
          path,
          method: req.method,
          headers: Object.fromEntries(req.headers),
          body: new Uint8Array(await req.arrayBuffer()),
          at: Date.now(),
        };
        this.requests.push(received);
        const hits = this.#hits.get(path) ?? 0;
        this.#hits.set(path, hits + 1);
        this.#check();
        const script = this.scripts.get(path);
        return script ? await script(received, hits) : new Response("ok");
      },
    );
    this.url = `http://127.0.0.1:${(this.#server.addr as Deno.NetAddr).port}`;
  }

  /** An answer that never comes until the receiver closes (a hung endpoint). */
  hang(): Promise<Response> {
    return new Promise((resolve) => {
      const release = () => resolve(new Response("late"));
      this.#hanging.add(release);
    });
  }

  on(path: string, script: Script): string {
    this.scripts.set(path, script);
    return `${this.url}${path}`;
  }

  at(path: string): Received[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Resolves once `pred` holds (checked on each request), or rejects after timeoutMs. */
  async until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (pred()) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => this.#waiters.push({ pred, resolve })),
        new Promise<never>((_, reject) =>
          timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs)
        ),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  #check() {
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.pred()) return true;
      w.resolve();
      return false;
    });
  }

  async [Symbol.asyncDispose]() {
    for (const release of this.#hanging) release();
    await this.#server.shutdown();
  }
}
