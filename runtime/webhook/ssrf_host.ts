// Host names as checkWebhookUrl sees them: parsing the WHATWG URL's hostname into a name or
// an IP literal, the RFC 1035 limits, and the names that only mean something locally.
import ipaddr from "ipaddr.js";
import type { Ip } from "./ssrf_ranges.ts";
import { type Checked, urlRefused } from "./ssrf_refusal.ts";

/** Longest host name, characters (RFC 1035 §2.3.4, without the trailing dot). */
export const HOST_NAME_CHARS_MAX = 253;
/** Longest label of a host name, characters (RFC 1035 §2.3.4). */
export const HOST_LABEL_CHARS_MAX = 63;

// Names that only ever mean something on the local network: RFC 6761 (localhost), RFC 6762
// (local), RFC 8375 (home.arpa) and ICANN's private-use "internal". Refusing them here is
// early feedback; their addresses would be refused at delivery anyway.
const LOCAL_NAME_SUFFIXES = ["localhost", "local", "internal", "home.arpa"];

export function isLocalName(name: string): boolean {
  return LOCAL_NAME_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

// What the WHATWG parser makes of every IPv4 host, and what getaddrinfo answers. Testing
// it first keeps names off ipaddr.js's parsers, which throw (slowly) on a name.
export const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

type ParsedHost = Checked<{
  readonly host: string;
  readonly kind: "name" | "ipv4" | "ipv6";
  readonly ip: Ip | undefined;
}>;

// `hostname` as the WHATWG URL parser left it: IPv4 in any encoding ("127.1",
// "0x7f000001", "017700000001", "2130706433") is already dotted decimal, IPv6 is in
// brackets and compressed, and IDN labels are punycode ("xn--").
export function parseHost(hostname: string): ParsedHost {
  if (hostname.startsWith("[") && hostname.endsWith("]")) {
    const inner = hostname.slice(1, -1);
    if (!ipaddr.IPv6.isValid(inner)) return urlRefused("host-name", `Host ${hostname} is invalid`);
    return { ok: true, host: inner, kind: "ipv6", ip: ipaddr.IPv6.parse(inner) };
  }
  if (DOTTED_QUAD.test(hostname)) {
    if (!ipaddr.IPv4.isValidFourPartDecimal(hostname)) {
      return urlRefused("host-name", `Host ${hostname} is not a valid IPv4 address`);
    }
    return { ok: true, host: hostname, kind: "ipv4", ip: ipaddr.IPv4.parse(hostname) };
  }
  const name = normalizeName(hostname);
  if (name.length === 0 || name.length > HOST_NAME_CHARS_MAX) {
    return urlRefused("host-name", `Host has ${name.length} chars (1..${HOST_NAME_CHARS_MAX})`);
  }
  for (const label of name.split(".")) {
    if (label.length === 0 || label.length > HOST_LABEL_CHARS_MAX) {
      const shown = label.length > 20 ? `${label.slice(0, 20)}…` : label;
      const why = `Host label "${shown}" has ${label.length} chars (1..${HOST_LABEL_CHARS_MAX})`;
      return urlRefused("host-name", why);
    }
    if (!/^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?$/.test(label)) {
      return urlRefused("host-name", `Host label "${label}" has characters outside [a-z0-9_-]`);
    }
  }
  return { ok: true, host: name, kind: "name", ip: undefined };
}

export function normalizeName(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}
