// All webhook egress goes through here: the URL check at registration (checkWebhookUrl) and
// the transport that delivers: resolve the host ourselves, vet every answer (SSRF guard),
// then POST to the vetted address only (no DNS rebinding), never following redirects.
import type { BrokerConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import { BrokerError } from "../protocol/errors.ts";
import type { WebhookTransport } from "./delivery_service.ts";
import { H1WebhookClient } from "./h1_delivery.ts";
import {
  checkWebhookUrl,
  createCachingResolver,
  createEgressPolicy,
  createSystemResolver,
  type EgressPolicy,
  resolveAndVet,
  type Resolver,
  VetMemo,
} from "./ssrf.ts";

export interface WebhookEgress {
  /** Throws BrokerError WEBHOOK_URL_REFUSED when the URL may not be registered. */
  checkUrl(url: string): void;
  transport: WebhookTransport;
  /** Aborts requests in flight and closes pooled connections. */
  close(): Promise<void>;
}

export interface EgressOptions {
  /** Injected in tests; the system resolver with a short cache otherwise. */
  resolver?: Resolver;
  nowMs?: () => number;
}

export function createEgress(
  config: BrokerConfig,
  _log: Logger,
  options: EgressOptions = {},
): WebhookEgress {
  const nowMs = options.nowMs ?? (() => performance.now());
  const policy: EgressPolicy = createEgressPolicy({
    allowHosts: config.webhookAllowHosts,
    allowHttp: config.webhookAllowHttp,
  });
  const resolver = options.resolver ??
    createCachingResolver(createSystemResolver(), {
      nowMs,
      cacheMs: config.webhookDnsCacheMs,
      entriesMax: config.webhookDnsCacheEntriesMax,
    });
  // Our own HTTP/1.1 client with a pinned connect (h1_delivery.ts, issue #6).
  const client = new H1WebhookClient({
    policy,
    totalTimeoutMs: config.webhookTimeoutMsDefault,
    bodyPrefixBytes: config.webhookLogResponseBytes,
    connectTimeoutMs: config.webhookConnectTimeoutMs,
    responseBytesMax: config.webhookResponseBytesMax,
    responseHeaderBytesMax: config.webhookResponseHeaderBytesMax,
    connectionsPerAddressMax: config.webhookConnectionsPerAddressMax,
    idleConnectionMs: config.webhookIdleConnectionMs,
    targetsCachedMax: config.webhookTargetsCachedMax,
    nowMs,
  });
  const decoder = new TextDecoder();
  const vets = { memo: new VetMemo(policy) };

  const checkUrl = (raw: string) => {
    const checked = checkWebhookUrl(raw, policy);
    if (!checked.ok) throw new BrokerError("WEBHOOK_URL_REFUSED", checked.error.message);
  };

  const transport: WebhookTransport = async (req) => {
    // Checked once per URL (the policy is fixed for the client's life); the address is
    // resolved (cached) and vetted on every delivery, here and again in postPinned.
    const target = client.checkTarget(req.url);
    if (!target.ok) throw target.error;
    const vetted = await resolveAndVet(target.host, policy, resolver, vets);
    if (!vetted.ok) throw vetted.error;
    const outcome = await client.postPinned({
      url: req.url,
      address: vetted.address,
      body: req.body,
      headers: req.headers,
      signal: req.signal,
      totalTimeoutMs: req.timeoutMs,
      ...(req.method ? { method: req.method } : {}),
    });
    if (!outcome.ok) throw outcome.error;
    return {
      status: outcome.status,
      retryAfter: outcome.headers["retry-after"] ?? null,
      bodyPrefix: decoder.decode(outcome.bodyPrefix),
    };
  };

  return { checkUrl, transport, close: () => client.close() };
}
