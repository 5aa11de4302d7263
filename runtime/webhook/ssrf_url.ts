// Registration-time check of a webhook URL (step 1 of ssrf.ts's header): scheme,
// userinfo, port and host, with IP literals vetted; no DNS, names are vetted at delivery.
import { isLocalName, parseHost } from "./ssrf_host.ts";
import { type EgressPolicy, isAllowlisted } from "./ssrf_policy.ts";
import { classifyAddress } from "./ssrf_ranges.ts";
import { addressRefused, type Checked, urlRefused } from "./ssrf_refusal.ts";

/** A URL that passed checkWebhookUrl. */
export interface WebhookTarget {
  readonly url: URL;
  /** Lower case, without brackets or a trailing dot: a name or an IP literal. */
  readonly host: string;
  readonly hostKind: "name" | "ipv4" | "ipv6";
  readonly port: number;
  /** The host is on the allowlist: its addresses are not checked. */
  readonly allowlisted: boolean;
}

/** Registration-time check of a webhook URL; no DNS (names are vetted at delivery). */
export function checkWebhookUrl(input: string, policy: EgressPolicy): Checked<WebhookTarget> {
  if (input.length > policy.urlCharsMax) {
    return urlRefused("url-too-long", `URL has ${input.length} > ${policy.urlCharsMax} chars`);
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch (cause) {
    return urlRefused("invalid-url", "URL does not parse (bad host, IP literal or port)", cause);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return urlRefused("scheme", `Scheme ${url.protocol} is not allowed (only https: or http:)`);
  }
  // WHATWG keeps "a@" as username "a"; credentials in a webhook URL would be sent to the
  // receiver's host and logged everywhere the URL is.
  if (url.username !== "" || url.password !== "") {
    return urlRefused("userinfo", "URL carries userinfo (user:password@), which is not allowed");
  }
  const host = parseHost(url.hostname);
  if (!host.ok) return host;
  const allowlisted = isAllowlisted(host.host, host.ip, policy);
  if (url.protocol === "http:" && !policy.allowHttp && !allowlisted) {
    return urlRefused("scheme", "Scheme http: is not allowed (only https:)");
  }
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  if (port === 0 || (!allowlisted && !policy.allowedPorts.has(port))) {
    const ports = [...policy.allowedPorts].join(", ");
    return urlRefused("port", `Port ${port} is not allowed (allowed: ${ports})`);
  }
  if (host.ip !== undefined && !allowlisted) {
    const vetted = classifyAddress(host.ip);
    if (!vetted.public) return addressRefused(host.host, vetted.range, vetted.label);
  }
  if (host.ip === undefined && !allowlisted && !host.host.includes(".")) {
    // A single-label name resolves through the resolver's search domains: internal hosts.
    return urlRefused("host-name", `Host ${host.host} is a single-label name; use a FQDN`);
  }
  if (host.ip === undefined && !allowlisted && isLocalName(host.host)) {
    return urlRefused("host-name", `Host ${host.host} is a local-only name (RFC 6761/6762)`);
  }
  return { ok: true, url, host: host.host, hostKind: host.kind, port, allowlisted };
}
