// Which IP addresses are public unicast (reference/reliability.md §6.2): the refused ranges
// by name, so a refusal says which, and the IPv6 forms that embed an IPv4 address.
import ipaddr from "ipaddr.js";

export type IPv4 = ipaddr.IPv4;
export type IPv6 = ipaddr.IPv6;
export type Ip = IPv4 | IPv6;

export type AddressVerdict =
  | { readonly public: true }
  | { readonly public: false; readonly range: string; readonly label: string };

/**
 * Public unicast or not. The listed ranges (§6.2) are checked by name so a refusal says
 * which; anything else that ipaddr.js does not class "unicast" is refused too. Addresses
 * that embed an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by that address.
 */
export function classifyAddress(ip: Ip): AddressVerdict {
  if (ip.kind() === "ipv4") return classifyV4(ip as IPv4);
  const v6 = ip as IPv6;
  for (const [prefix, bits, label, embedded] of EMBEDDING_RANGES) {
    if (!v6.match(prefix, bits)) continue;
    const inner = classifyV4(embedded(v6));
    if (inner.public) return inner;
    const cidr = `${prefix.toString()}/${bits}`;
    return { public: false, range: `${inner.range} via ${label} ${cidr}`, label: inner.label };
  }
  for (const [prefix, bits, label] of IPV6_REFUSED) {
    if (v6.match(prefix, bits)) return { public: false, range: `${prefix}/${bits}`, label };
  }
  const range = v6.range();
  return range === "unicast" ? { public: true } : { public: false, range, label: range };
}

function classifyV4(ip: IPv4): AddressVerdict {
  for (const [prefix, bits, label] of IPV4_REFUSED) {
    if (ip.match(prefix, bits)) return { public: false, range: `${prefix}/${bits}`, label };
  }
  const range = ip.range();
  return range === "unicast" ? { public: true } : { public: false, range, label: range };
}

// reference/reliability.md §6.2, rule 2; labels from the IANA special-purpose registries.
const IPV4_REFUSED: readonly (readonly [IPv4, number, string])[] = [
  ["0.0.0.0/8", "'this network' (0.0.0.0 reaches the local host)"],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local (cloud metadata at 169.254.169.254)"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation (TEST-NET-1)"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation (TEST-NET-2)"],
  ["203.0.113.0/24", "documentation (TEST-NET-3)"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved (and broadcast)"],
].map(([cidr, label]) => [...ipaddr.IPv4.parseCIDR(cidr), label] as const);

const IPV6_REFUSED: readonly (readonly [IPv6, number, string])[] = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  // ::a.b.c.d, deprecated (RFC 4291 §2.5.5.1): no public host has one.
  ["::/96", "IPv4-compatible (deprecated)"],
  ["fc00::/7", "unique local"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
  ["2001:db8::/32", "documentation"],
].map(([cidr, label]) => [...ipaddr.IPv6.parseCIDR(cidr), label] as const);

// IPv6 forms that carry an IPv4 address a gateway or the dual-stack socket will reach.
const EMBEDDING_RANGES: readonly (readonly [IPv6, number, string, (ip: IPv6) => IPv4])[] = [
  ["::ffff:0:0/96", "IPv4-mapped", (ip: IPv6) => ip.toIPv4Address()],
  ["64:ff9b::/96", "NAT64", (ip: IPv6) => v4FromParts(ip.parts[6], ip.parts[7])],
  ["2002::/16", "6to4", (ip: IPv6) => v4FromParts(ip.parts[1], ip.parts[2])],
].map(([cidr, label, embedded]) => {
  const [prefix, bits] = ipaddr.IPv6.parseCIDR(cidr as string);
  return [prefix, bits, label as string, embedded as (ip: IPv6) => IPv4] as const;
});

function v4FromParts(high: number, low: number): IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
