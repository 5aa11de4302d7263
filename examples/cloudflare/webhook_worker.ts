// A Cloudflare Worker that receives edgemq's webhook deliveries and verifies their Standard
// Webhooks signature (Web Crypto) before acting on them: 204 settles the delivery, 401
// refuses a forged or stale one. Binding: WEBHOOK_SECRET (the subscription's whsec_…).
// In your app: `import { verifyWebhook } from "@edgemq/client/webhooks";`.
import { verifyWebhook, WebhookVerificationError } from "../../client/webhooks.ts";

interface Env {
  WEBHOOK_SECRET: string;
}

/** Deliveries verified by this instance, newest last (what GET answers; for the test). */
const verified: { headers: Record<string, string>; body: string }[] = [];

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method === "GET") return Response.json(verified);
    const body = await request.text(); // the exact bytes that were signed
    try {
      await verifyWebhook(request.headers, body, env.WEBHOOK_SECRET);
    } catch (err) {
      if (!(err instanceof WebhookVerificationError)) throw err;
      return Response.json({ refused: err.code }, { status: 401 });
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of request.headers) if (k.startsWith("webhook-")) headers[k] = v;
    verified.push({ headers, body });
    return new Response(null, { status: 204 });
  },
};
