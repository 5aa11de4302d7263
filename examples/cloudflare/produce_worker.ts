// A Cloudflare Worker that produces one message per request (POST body → topic "orders").
// In your app: `import { MqClient } from "@edgemq/client";` (npm) — here the repo's copy.
// Settings are the worker's bindings: MQ_URL (the broker or functions URL), MQ_TOKEN.
import { BrokerError, MqClient } from "../../client/mod.ts";

interface Env {
  MQ_URL: string;
  MQ_TOKEN?: string;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST") return new Response("POST a message body", { status: 405 });
    const mq = new MqClient({ baseUrl: env.MQ_URL, token: env.MQ_TOKEN, timeoutMs: 5000 });
    try {
      const result = await mq.produce("orders", {
        body: await request.text(),
        contentType: request.headers.get("content-type") ?? "text/plain",
        tag: "web",
        properties: { via: "cloudflare" },
        // A client retrying its POST stores one message, not two.
        idempotencyKey: request.headers.get("idempotency-key") ?? undefined,
      });
      return Response.json(result, { status: 201 });
    } catch (err) {
      if (err instanceof BrokerError) return Response.json(err.toProblem(), { status: err.status });
      throw err;
    }
  },
};
