// A Deno Deploy-style handler: no file system, settings from the environment. Run it with
//   MQ_URL=http://127.0.0.1:8080 deno serve --allow-net --allow-env=MQ_URL,MQ_TOKEN main.ts
// In your app: `import { MqClient } from "jsr:@edgemq/client";`.
import { MqClient } from "../../client/mod.ts";

const mq = new MqClient({ baseUrl: Deno.env.get("MQ_URL")!, token: Deno.env.get("MQ_TOKEN") });

export default {
  async fetch(request: Request): Promise<Response> {
    const { messageId } = await mq.produce("orders", {
      body: new Uint8Array(await request.arrayBuffer()),
      contentType: "application/octet-stream",
      shardingKey: new URL(request.url).searchParams.get("customer") ?? undefined,
      properties: { via: "deno" },
    });
    return Response.json({ messageId }, { status: 201 });
  },
} satisfies Deno.ServeDefaultExport;
