// A Vercel edge route (`api/produce.ts`, runtime "edge"): POST → one message on "orders".
// In your app: `import { MqClient } from "@edgemq/client";`. MQ_URL and MQ_TOKEN come from
// the project's environment variables.
import { MqClient } from "../../../client/mod.ts";

declare const process: { env: Record<string, string | undefined> };

export const config = { runtime: "edge" };

export default async function handler(request: Request): Promise<Response> {
  const mq = new MqClient({ baseUrl: process.env.MQ_URL!, token: process.env.MQ_TOKEN });
  const result = await mq.produce("orders", {
    body: await request.text(),
    tag: "web",
    keys: [request.headers.get("x-order-id") ?? "none"],
    properties: { via: "vercel-edge" },
  });
  return Response.json(result, { status: 201 });
}
