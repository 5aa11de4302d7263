// The egress policy: which schemes, ports and allowlisted hosts or ranges a webhook may
// use, validated once at startup and read on every check.
import ipaddr from "ipaddr.js";
import { normalizeName } from "./ssrf_host.ts";
import type { Ip } from "./ssrf_ranges.ts";

/** Longest accepted webhook URL, characters: what browsers and CDNs reliably carry. */
export const WEBHOOK_URL_CHARS_MAX = 2048;
/** Ports a non-allowlisted URL may name besides those in EgressPolicy.allowedPorts. */
export const WEBHOOK_DEFAULT_PORTS: readonly number[] = [80, 443];

export interface EgressPolicyOptions {
  /** Accept `http:` URLs besides `https:`. Default false. */
  readonly allowHttp?: boolean;
  /** Ports accepted besides 80 and 443. Default none. */
  readonly allowedPorts?: readonly number[];
  /**
   * Host names (exact, case-insensitive) and IP addresses or CIDR ranges that skip the
   * address, port and https-only checks, e.g. "hooks.corp.example", "127.0.0.1/32".
   * Default none.
   */
  readonly allowHosts?: readonly string[];
  /** Longest URL, characters. Default WEBHOOK_URL_CHARS_MAX. */
  readonly urlCharsMax?: number;
}

/** A validated policy; build it once (createEgressPolicy) and reuse it on the hot path. */
export interface EgressPolicy {
  readonly allowHttp: boolean;
  readonly allowedPorts: ReadonlySet<number>;
  readonly allowHostNames: ReadonlySet<string>;
  readonly allowRanges: readonly (readonly [Ip, number])[];
  readonly urlCharsMax: number;
}

/** Throws a TypeError on a malformed allowlist entry: that is a configuration error. */
export function createEgressPolicy(options: EgressPolicyOptions = {}): EgressPolicy {
  const allowHostNames = new Set<string>();
  const allowRanges: (readonly [Ip, number])[] = [];
  for (const entry of options.allowHosts ?? []) {
    const bare = entry.startsWith("[") && entry.endsWith("]") ? entry.slice(1, -1) : entry;
    if (ipaddr.isValidCIDR(bare)) allowRanges.push(ipaddr.parseCIDR(bare));
    else if (ipaddr.isValid(bare)) {
      const ip = ipaddr.parse(bare);
      allowRanges.push([ip, ip.kind() === "ipv4" ? 32 : 128]);
    } else if (/^[a-z0-9_.-]+$/i.test(entry)) allowHostNames.add(normalizeName(entry));
    else throw new TypeError(`Cannot use allowHosts entry ${JSON.stringify(entry)}`);
  }
  for (const port of options.allowedPorts ?? []) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new TypeError(`Cannot use allowedPorts entry ${port}: not a port in 1..65535`);
    }
  }
  return {
    allowHttp: options.allowHttp ?? false,
    allowedPorts: new Set([...WEBHOOK_DEFAULT_PORTS, ...(options.allowedPorts ?? [])]),
    allowHostNames,
    allowRanges,
    urlCharsMax: options.urlCharsMax ?? WEBHOOK_URL_CHARS_MAX,
  };
}

export function isAllowlisted(host: string, ip: Ip | undefined, policy: EgressPolicy): boolean {
  if (ip !== undefined) return inAllowedRange(ip, policy);
  return policy.allowHostNames.has(host);
}

export function inAllowedRange(ip: Ip, policy: EgressPolicy): boolean {
  return policy.allowRanges.some(([prefix, bits]) =>
    prefix.kind() === ip.kind() && ip.match(prefix, bits)
  );
}
