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
import { nodeDns } from "../protocol/node_builtins.ts";
import { DOTTED_QUAD, parseHost } from "./ssrf_host.ts";
import { type EgressPolicy, inAllowedRange } from "./ssrf_policy.ts";
import { classifyAddress, type Ip, type IPv6 } from "./ssrf_ranges.ts";
import {
  addressRefused,
  type Checked,
  dnsFailed,
  mixedAnswerRefusal,
  WebhookTargetError,
} from "./ssrf_refusal.ts";

// The guard's parts, re-exported so callers import the guard from this one module.
export { HOST_LABEL_CHARS_MAX, HOST_NAME_CHARS_MAX } from "./ssrf_host.ts";
export {
  createEgressPolicy,
  type EgressPolicy,
  type EgressPolicyOptions,
  WEBHOOK_DEFAULT_PORTS,
  WEBHOOK_URL_CHARS_MAX,
} from "./ssrf_policy.ts";
export { type AddressVerdict, classifyAddress } from "./ssrf_ranges.ts";
export {
  type Checked,
  WebhookTargetError,
  type WebhookTargetErrorCode,
  type WebhookTargetRefusal,
} from "./ssrf_refusal.ts";
export { checkWebhookUrl, type WebhookTarget } from "./ssrf_url.ts";

/** A resolver answering later than this fails the delivery, ms. */
export const DNS_TIMEOUT_MS_DEFAULT = 5_000;
/** How long createCachingResolver reuses answers, ms. getaddrinfo reports no TTL; a few
 * seconds spares its thread pool thousands of lookups a second to one endpoint, and cached
 * answers are vetted again on every use, so a cache can never let a private answer in. */
export const DNS_CACHE_MS_DEFAULT = 10_000;
/** Host names createCachingResolver remembers; the oldest go first past this. */
export const DNS_CACHE_ENTRIES_MAX_DEFAULT = 10_000;

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
    lookup: (host) => nodeDns().lookup(host, { all: true, verbatim: true }),
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
