// The SSRF guard for webhook egress (reference/reliability.md §5.1 "Webhook registration",
// §6.2). A webhook URL is user input that makes the broker open connections, so:
//   1. at registration, checkWebhookUrl() refuses schemes, userinfo, ports and IP
//      literals (in any encoding the WHATWG URL parser turns into an address);
//   2. at delivery, resolveAndVet() resolves A and AAAA itself and refuses the name if any
//      answer is not public unicast; the caller connects to the address it returns
//      (http_delivery.ts), never to the name, so a second DNS answer cannot rebind it.
// The allowlist (EgressPolicy.allowHosts) is the only way around the address check; tests
// use it to reach a loopback receiver.
import ipaddr from "ipaddr.js";
import { lookup } from "node:dns/promises";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
type Ip = IPv4 | IPv6;

/** Longest accepted webhook URL, characters: what browsers and CDNs reliably carry. */
export const WEBHOOK_URL_CHARS_MAX = 2048;
/** Longest host name, characters (RFC 1035 §2.3.4, without the trailing dot). */
export const HOST_NAME_CHARS_MAX = 253;
/** Longest label of a host name, characters (RFC 1035 §2.3.4). */
export const HOST_LABEL_CHARS_MAX = 63;
/** Ports a non-allowlisted URL may name besides those in EgressPolicy.allowedPorts. */
export const WEBHOOK_DEFAULT_PORTS: readonly number[] = [80, 443];
/** A resolver answering later than this fails the delivery, ms. */
export const DNS_TIMEOUT_MS_DEFAULT = 5_000;
/** How long createCachingResolver reuses answers, ms. getaddrinfo reports no TTL; a few
 * seconds spares its thread pool thousands of lookups a second to one endpoint, and cached
 * answers are vetted again on every use, so a cache can never let a private answer in. */
export const DNS_CACHE_MS_DEFAULT = 10_000;
/** Host names createCachingResolver remembers; the oldest go first past this. */
export const DNS_CACHE_ENTRIES_MAX_DEFAULT = 10_000;

export type WebhookTargetErrorCode =
  | "WEBHOOK_URL_REFUSED" // scheme, userinfo, port, malformed or refused host name
  | "WEBHOOK_ADDRESS_REFUSED" // an IP literal or a DNS answer outside public unicast
  | "WEBHOOK_DNS_FAILED"; // the name did not resolve (in time)

export type WebhookTargetRefusal =
  | "invalid-url"
  | "url-too-long"
  | "scheme"
  | "userinfo"
  | "port"
  | "host-name"
  | "address"
  | "dns";

/** Why a webhook target was refused. `code` is stable; `message` names the reason. */
export class WebhookTargetError extends Error {
  constructor(
    readonly code: WebhookTargetErrorCode,
    readonly reason: WebhookTargetRefusal,
    message: string,
    /** For "address": the refused address and the range it fell in, e.g. "127.0.0.0/8". */
    readonly address?: string,
    readonly range?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "WebhookTargetError";
  }
}

export type Checked<T> = ({ readonly ok: true } & T) | {
  readonly ok: false;
  readonly error: WebhookTargetError;
};

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

/** An address a delivery may connect to: canonical text, checked against the policy. */
export interface VettedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** One answer of a Resolver, as node:dns lookup({all: true}) gives it. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** Resolves a host name to all its A and AAAA answers; injected so tests need no DNS. */
export interface Resolver {
  lookup(host: string): Promise<readonly ResolvedAddress[]>;
  /** Answers already at hand and still fresh (a cache), without waiting; else undefined. */
  cached?(host: string): readonly ResolvedAddress[] | undefined;
}

/**
 * The system resolver: getaddrinfo through node:dns/promises (same answers as the OS,
 * /etc/hosts included). Works on Deno and Bun. getaddrinfo cannot be cancelled, so
 * resolveAndVet puts a deadline around it.
 */
export function createSystemResolver(): Resolver {
  return {
    lookup: (host) => lookup(host, { all: true, verbatim: true }),
  };
}

export interface CachingResolverOptions {
  /** Monotonic ms (the platform clock). */
  readonly nowMs: () => number;
  /** Default DNS_CACHE_MS_DEFAULT. */
  readonly cacheMs?: number;
  /** Default DNS_CACHE_ENTRIES_MAX_DEFAULT. */
  readonly entriesMax?: number;
}

/**
 * Wraps a resolver for the delivery hot path: answers are reused for cacheMs, concurrent
 * lookups of one name share one query, and failures are not kept (the next delivery asks
 * again).
 */
export function createCachingResolver(inner: Resolver, options: CachingResolverOptions): Resolver {
  const cacheMs = options.cacheMs ?? DNS_CACHE_MS_DEFAULT;
  const entriesMax = options.entriesMax ?? DNS_CACHE_ENTRIES_MAX_DEFAULT;
  type Entry = {
    expiresMs: number;
    answers: Promise<readonly ResolvedAddress[]>;
    /** The answers once they came. */
    settled: readonly ResolvedAddress[] | undefined;
  };
  const entries = new Map<string, Entry>();
  return {
    cached(host) {
      const hit = entries.get(host);
      return hit !== undefined && hit.expiresMs > options.nowMs() ? hit.settled : undefined;
    },
    lookup(host) {
      const nowMs = options.nowMs();
      const hit = entries.get(host);
      if (hit !== undefined && hit.expiresMs > nowMs) return hit.answers;
      entries.delete(host);
      if (entries.size >= entriesMax) entries.delete(entries.keys().next().value!);
      const answers = inner.lookup(host);
      const entry: Entry = { expiresMs: nowMs + cacheMs, answers, settled: undefined };
      entries.set(host, entry);
      answers.then((settled) => {
        entry.settled = settled;
      }, () => {
        if (entries.get(host) === entry) entries.delete(host);
      });
      return answers;
    },
  };
}

export interface ResolveOptions {
  /** Default DNS_TIMEOUT_MS_DEFAULT. */
  readonly dnsTimeoutMs?: number;
  /** Remembers vetting verdicts (delivery path); made for the same policy. */
  readonly memo?: VetMemo;
}

/** Verdicts remembered at most, per VetMemo; the oldest go first past this. */
export const VET_MEMO_ENTRIES_MAX = 4096;

/**
 * vetAddress verdicts remembered per (host, address) for one policy. A verdict depends on
 * nothing else, and parsing an address costs more than the rest of a delivery's checks
 * (a profile of the push bench put ~5% of the broker's CPU there). DNS answers are not
 * remembered here: the resolver's cache and TTLs decide which address a name has.
 */
export class VetMemo {
  readonly #verdicts = new Map<string, Checked<{ readonly address: VettedAddress }>>();
  constructor(readonly policy: EgressPolicy) {}

  vet(host: string, address: string): Checked<{ readonly address: VettedAddress }> {
    const key = `${host} ${address}`;
    let verdict = this.#verdicts.get(key);
    if (verdict === undefined) {
      verdict = vetAddress(host, address, this.policy);
      if (this.#verdicts.size >= VET_MEMO_ENTRIES_MAX) {
        this.#verdicts.delete(this.#verdicts.keys().next().value!);
      }
      this.#verdicts.set(key, verdict);
    }
    return verdict;
  }
}

/**
 * Delivery-time check: resolves `host` (from checkWebhookUrl) and returns the address to
 * connect to. Every answer must be public unicast (one private answer refuses the name:
 * a resolver that mixes answers is how rebinding attacks hide), unless the host or the
 * answer is allowlisted. IP literals are vetted without DNS.
 */
export async function resolveAndVet(
  host: string,
  policy: EgressPolicy,
  resolver: Resolver,
  options: ResolveOptions = {},
): Promise<Checked<{ readonly address: VettedAddress }>> {
  const memo = options.memo;
  if (memo !== undefined && memo.policy !== policy) throw new Error("VetMemo of another policy");
  const vet = (name: string, address: string) =>
    memo ? memo.vet(name, address) : vetAddress(name, address, policy);
  // A host that is already an IP literal (checkWebhookUrl's canonical form) needs no parse.
  if (memo !== undefined && (DOTTED_QUAD.test(host) || host.includes(":"))) {
    const verdict = memo.vet(host, host);
    if (verdict.ok && verdict.address.address === host) return verdict;
  }
  const literal = parseHost(host.includes(":") ? `[${host}]` : host);
  if (!literal.ok) return literal;
  if (literal.ip !== undefined) return vet(literal.host, literal.host);
  // A fresh cached answer needs no deadline (a timer per delivery); it is vetted below
  // like any other.
  let answers = resolver.cached?.(literal.host);
  if (answers === undefined) {
    try {
      answers = await withDeadline(
        resolver.lookup(literal.host),
        options.dnsTimeoutMs ?? DNS_TIMEOUT_MS_DEFAULT,
      );
    } catch (cause) {
      const why = cause instanceof DeadlineError ? "timed out" : "failed";
      return { ok: false, error: dnsFailed(`Resolving ${literal.host} ${why}`, cause) };
    }
  }
  if (answers.length === 0) {
    return { ok: false, error: dnsFailed(`Resolving ${literal.host} gave no address`) };
  }
  let first: VettedAddress | undefined;
  for (const answer of answers) {
    const vetted = vet(literal.host, answer.address);
    if (!vetted.ok) return mixedAnswerRefusal(literal.host, answers.length, vetted.error);
    first ??= vetted.address;
  }
  return { ok: true, address: first! };
}

/**
 * Checks one address for `host` (a name or the literal itself): public unicast, or
 * allowlisted by host name or range. IPv4-mapped answers come back as plain IPv4.
 */
export function vetAddress(
  host: string,
  address: string,
  policy: EgressPolicy,
): Checked<{ readonly address: VettedAddress }> {
  let ip: Ip;
  try {
    // Lenient on purpose: "127.1" or "0x7f.0.0.1" from a stub resolver is still parsed
    // to the address it means, and the canonical form is what we connect to. The common
    // dotted quad skips ipaddr.parse, which tries its long IPv6 pattern first.
    ip = DOTTED_QUAD.test(address) ? ipaddr.IPv4.parse(address) : ipaddr.parse(address);
  } catch (cause) {
    const error = new WebhookTargetError(
      "WEBHOOK_ADDRESS_REFUSED",
      "address",
      `Resolver answered ${JSON.stringify(address)} for ${host}, which is not an IP address`,
      address,
      undefined,
      { cause },
    );
    return { ok: false, error };
  }
  if (ip.kind() === "ipv6" && (ip as IPv6).zoneId !== undefined) {
    return addressRefused(address, "scoped", "an IPv6 address with a zone id");
  }
  const connectTo = ip.kind() === "ipv6" && (ip as IPv6).isIPv4MappedAddress()
    ? (ip as IPv6).toIPv4Address()
    : ip;
  const vetted: VettedAddress = {
    address: connectTo.toString(),
    family: connectTo.kind() === "ipv4" ? 4 : 6,
  };
  if (policy.allowHostNames.has(host) || inAllowedRange(ip, policy)) {
    return { ok: true, address: vetted };
  }
  const verdict = classifyAddress(ip);
  if (!verdict.public) return addressRefused(address, verdict.range, verdict.label);
  return { ok: true, address: vetted };
}

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

// Names that only ever mean something on the local network: RFC 6761 (localhost), RFC 6762
// (local), RFC 8375 (home.arpa) and ICANN's private-use "internal". Refusing them here is
// early feedback; their addresses would be refused at delivery anyway.
const LOCAL_NAME_SUFFIXES = ["localhost", "local", "internal", "home.arpa"];

function isLocalName(name: string): boolean {
  return LOCAL_NAME_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

// What the WHATWG parser makes of every IPv4 host, and what getaddrinfo answers. Testing
// it first keeps names off ipaddr.js's parsers, which throw (slowly) on a name.
const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

type ParsedHost = Checked<{
  readonly host: string;
  readonly kind: "name" | "ipv4" | "ipv6";
  readonly ip: Ip | undefined;
}>;

// `hostname` as the WHATWG URL parser left it: IPv4 in any encoding ("127.1",
// "0x7f000001", "017700000001", "2130706433") is already dotted decimal, IPv6 is in
// brackets and compressed, and IDN labels are punycode ("xn--").
function parseHost(hostname: string): ParsedHost {
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

function normalizeName(name: string): string {
  const lower = name.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}

function isAllowlisted(host: string, ip: Ip | undefined, policy: EgressPolicy): boolean {
  if (ip !== undefined) return inAllowedRange(ip, policy);
  return policy.allowHostNames.has(host);
}

function inAllowedRange(ip: Ip, policy: EgressPolicy): boolean {
  return policy.allowRanges.some(([prefix, bits]) =>
    prefix.kind() === ip.kind() && ip.match(prefix, bits)
  );
}

function urlRefused(
  reason: WebhookTargetRefusal,
  message: string,
  cause?: unknown,
): { ok: false; error: WebhookTargetError } {
  const options = cause === undefined ? undefined : { cause };
  const error = new WebhookTargetError(
    "WEBHOOK_URL_REFUSED",
    reason,
    `Cannot use webhook URL: ${message}`,
    undefined,
    undefined,
    options,
  );
  return { ok: false, error };
}

function addressRefused(
  address: string,
  range: string,
  label: string,
): { ok: false; error: WebhookTargetError } {
  const message = `Cannot deliver to ${address}: it is in ${range} (${label}), not public unicast`;
  const error = new WebhookTargetError(
    "WEBHOOK_ADDRESS_REFUSED",
    "address",
    message,
    address,
    range,
  );
  return { ok: false, error };
}

function mixedAnswerRefusal(
  host: string,
  answerCount: number,
  inner: WebhookTargetError,
): { ok: false; error: WebhookTargetError } {
  if (inner.range === undefined) return { ok: false, error: inner };
  const of = answerCount > 1 ? ` (one of ${answerCount} answers; any private answer refuses)` : "";
  const error = new WebhookTargetError(
    "WEBHOOK_ADDRESS_REFUSED",
    "address",
    `Cannot deliver to ${host}: it resolves to ${inner.address}${of}, in ${inner.range}`,
    inner.address,
    inner.range,
    { cause: inner },
  );
  return { ok: false, error };
}

function dnsFailed(message: string, cause?: unknown): WebhookTargetError {
  const options = cause === undefined ? undefined : { cause };
  return new WebhookTargetError(
    "WEBHOOK_DNS_FAILED",
    "dns",
    message,
    undefined,
    undefined,
    options,
  );
}

class DeadlineError extends Error {}

async function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`No answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
