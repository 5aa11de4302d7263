// A Bun server that produces one message per request: `PORT=3000 MQ_URL=… bun server.ts`.
// In your app: `import { MqClient } from "@edgemq/client";`.
import { MqClient } from "../../client/mod.ts";

declare const Bun: {
  serve(options: {
    hostname: string;
    port: number;
    fetch(request: Request): Promise<Response>;
  }): { port: number };
  env: Record<string, string | undefined>;
};

const mq = new MqClient({ baseUrl: Bun.env.MQ_URL!, token: Bun.env.MQ_TOKEN });

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(Bun.env.PORT ?? 3000),
  async fetch(request) {
    const result = await mq.produce("orders", {
      body: await request.text(),
      tag: "web",
      delayMs: Number(new URL(request.url).searchParams.get("delayMs") ?? 0) || undefined,
      properties: { via: "bun" },
    });
    return Response.json(result, { status: 201 });
  },
});
console.log(JSON.stringify({ event: "listening", url: `http://127.0.0.1:${server.port}` }));
