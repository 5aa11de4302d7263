// All webhook egress goes through here: the URL check at registration and the transport
// that delivers. (Interim: fetch with manual redirects; the SSRF guard replaces it.)
import type { BrokerConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { WebhookTransport } from "./delivery_service.ts";

export interface WebhookEgress {
  checkUrl(url: string): void;
  transport: WebhookTransport;
  close(): void;
}

export function createEgress(config: BrokerConfig, _log: Logger): WebhookEgress {
  const checkUrl = (raw: string) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new BrokerError("WEBHOOK_URL_REFUSED", `Cannot parse webhook URL`);
    }
    if (!config.webhookAllowHosts.includes(url.hostname)) {
      throw new BrokerError("WEBHOOK_URL_REFUSED", `Host ${url.hostname} is not allowed`);
    }
  };
  const transport: WebhookTransport = async (req) => {
    const signal = AbortSignal.any([req.signal, AbortSignal.timeout(req.timeoutMs)]);
    const res = await fetch(req.url, {
      method: "POST",
      headers: req.headers,
      body: req.body as Uint8Array<ArrayBuffer>,
      redirect: "manual",
      signal,
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      bodyPrefix: text.slice(0, config.webhookLogResponseBytes),
    };
  };
  return { checkUrl, transport, close() {} };
}
