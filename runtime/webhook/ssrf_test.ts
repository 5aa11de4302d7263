// The SSRF guard: every URL trick of reliability.md §5.1, every range of §6.2, and the
// delivery-time DNS checks with stub resolvers. Nothing here opens a connection except
// the pinning test, which reaches a loopback receiver through an explicit allowlist.
import assert from "node:assert/strict";
import ipaddr from "ipaddr.js";
import {
  checkWebhookUrl,
  classifyAddress,
  createCachingResolver,
  createEgressPolicy,
  createSystemResolver,
  resolveAndVet,
  type ResolvedAddress,
  type Resolver,
  vetAddress,
  VetMemo,
  WebhookTargetError,
} from "./ssrf.ts";
import { H1WebhookClient } from "./h1_delivery.ts";

const strict = createEgressPolicy();

function refusal(url: string, policy = strict): WebhookTargetError {
  const checked = checkWebhookUrl(url, policy);
  assert.equal(checked.ok, false, `${url} should be refused`);
  if (checked.ok) throw new Error("unreachable");
  assert.ok(checked.error instanceof WebhookTargetError);
  return checked.error;
}

/** Answers from a script, one list per call; the last list repeats. Counts calls. */
function stubResolver(...script: (readonly ResolvedAddress[] | Error)[]) {
  const calls: string[] = [];
  const resolver: Resolver = {
    lookup(host) {
      const answer = script[Math.min(calls.length, script.length - 1)];
      calls.push(host);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
  return { resolver, calls };
}

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

Deno.test("checkWebhookUrl() refuses the registration catalogue of reliability.md §5.1", () => {
  const cases: [url: string, code: string, reason: string][] = [
    ["file:///etc/passwd", "WEBHOOK_URL_REFUSED", "scheme"],
    ["file://127.0.0.1/etc/passwd", "WEBHOOK_URL_REFUSED", "scheme"],
    ["ws://example.com/", "WEBHOOK_URL_REFUSED", "scheme"],
    ["ftp://example.com/hook", "WEBHOOK_URL_REFUSED", "scheme"],
    ["gopher://example.com:70/_SET%20x", "WEBHOOK_URL_REFUSED", "scheme"],
    ["data:text/plain,hi", "WEBHOOK_URL_REFUSED", "scheme"],
    ["javascript:alert(1)", "WEBHOOK_URL_REFUSED", "scheme"],
    ["http://example.com/hook", "WEBHOOK_URL_REFUSED", "scheme"], // http not enabled
    ["https://a@example.com/", "WEBHOOK_URL_REFUSED", "userinfo"],
    ["https://a:b@example.com/", "WEBHOOK_URL_REFUSED", "userinfo"],
    ["https://a@127.0.0.1/", "WEBHOOK_URL_REFUSED", "userinfo"],
    ["https://127.1/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://2130706433/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://0x7f000001/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://017700000001/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://0x7f.1/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://%31%32%37.0.0.1/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[::1]/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[::ffff:127.0.0.1]/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[::ffff:7f00:1]/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[::127.0.0.1]/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[64:ff9b::169.254.169.254]/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://[2002:a00:1::]/", "WEBHOOK_ADDRESS_REFUSED", "address"], // 6to4 of 10.0.0.1
    ["https://[fe80::1%25eth0]/", "WEBHOOK_URL_REFUSED", "invalid-url"],
    ["https://0.0.0.0/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://0/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://169.254.169.254/latest/meta-data/", "WEBHOOK_ADDRESS_REFUSED", "address"],
    ["https://example.com:0/", "WEBHOOK_URL_REFUSED", "port"],
    ["https://example.com:22/", "WEBHOOK_URL_REFUSED", "port"],
    ["https://example.com:6379/", "WEBHOOK_URL_REFUSED", "port"],
    ["https://example.com:65536/", "WEBHOOK_URL_REFUSED", "invalid-url"],
    ["https://1.2.3.256/", "WEBHOOK_URL_REFUSED", "invalid-url"],
    ["https://localhost/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://api.localhost/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://LOCALHOST./", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://printer.local/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://metadata/", "WEBHOOK_URL_REFUSED", "host-name"], // single label
    ["https://metadata.google.internal/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://exa*mple.com/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://a..example.com/", "WEBHOOK_URL_REFUSED", "host-name"],
    ["https://-a.example.com/", "WEBHOOK_URL_REFUSED", "host-name"],
    [`https://${"a".repeat(64)}.example.com/`, "WEBHOOK_URL_REFUSED", "host-name"],
    [`https://${"abcdefghi.".repeat(26)}com/`, "WEBHOOK_URL_REFUSED", "host-name"], // 263 chars
    [`https://example.com/${"x".repeat(2100)}`, "WEBHOOK_URL_REFUSED", "url-too-long"],
    ["not a url", "WEBHOOK_URL_REFUSED", "invalid-url"],
  ];
  for (const [url, code, reason] of cases) {
    const error = refusal(url);
    assert.equal(error.code, code, url);
    assert.equal(error.reason, reason, `${url}: ${error.message}`);
  }
});

Deno.test("checkWebhookUrl() names the range and the reason in its message", () => {
  assert.equal(
    refusal("https://2130706433/").message,
    "Cannot deliver to 127.0.0.1: it is in 127.0.0.0/8 (loopback), not public unicast",
  );
  const mapped = refusal("https://[::ffff:169.254.169.254]/");
  assert.equal(mapped.range, "169.254.0.0/16 via IPv4-mapped ::ffff:0:0/96");
  assert.match(mapped.message, /cloud metadata/);
  assert.equal(
    refusal("https://example.com:6379/").message,
    "Cannot use webhook URL: Port 6379 is not allowed (allowed: 80, 443)",
  );
  assert.equal(
    refusal("ftp://example.com/").message,
    "Cannot use webhook URL: Scheme ftp: is not allowed (only https: or http:)",
  );
  assert.equal(
    refusal("http://example.com/").message,
    "Cannot use webhook URL: Scheme http: is not allowed (only https:)",
  );
});

Deno.test("checkWebhookUrl() accepts public targets, IDN as punycode, and the policy's options", () => {
  const ok = checkWebhookUrl("https://Example.COM./hooks?a=1", strict);
  assert.ok(ok.ok);
  assert.equal(ok.host, "example.com");
  assert.equal(ok.port, 443);
  assert.equal(ok.hostKind, "name");
  assert.equal(ok.allowlisted, false);

  const idn = checkWebhookUrl("https://bücher.example.org/h", strict);
  assert.ok(idn.ok);
  assert.equal(idn.host, "xn--bcher-kva.example.org");

  const literal = checkWebhookUrl("https://[2606:4700:4700::1111]/", strict);
  assert.ok(literal.ok);
  assert.equal(literal.host, "2606:4700:4700::1111");
  assert.equal(literal.hostKind, "ipv6");

  assert.ok(checkWebhookUrl("https://93.184.216.34:443/", strict).ok);
  assert.ok(checkWebhookUrl(`https://${"a".repeat(63)}.example.com/`, strict).ok);

  const relaxed = createEgressPolicy({ allowHttp: true, allowedPorts: [8443] });
  assert.ok(checkWebhookUrl("http://example.com/", relaxed).ok);
  const port = checkWebhookUrl("https://example.com:8443/", relaxed);
  assert.ok(port.ok);
  assert.equal(port.port, 8443);
  assert.equal(refusal("https://example.com:8444/", relaxed).reason, "port");
  assert.equal(refusal("http://127.0.0.1/", relaxed).reason, "address");
});

Deno.test("checkWebhookUrl() lets allowlisted hosts through the address, port and https checks only", () => {
  const policy = createEgressPolicy({ allowHosts: ["127.0.0.1/32", "Receiver.Invalid", "[::1]"] });
  const loopback = checkWebhookUrl("http://127.0.0.1:45678/hook", policy);
  assert.ok(loopback.ok);
  assert.equal(loopback.allowlisted, true);
  assert.equal(loopback.port, 45678);
  assert.ok(checkWebhookUrl("http://[::1]:8080/", policy).ok);
  assert.ok(checkWebhookUrl("http://receiver.invalid:9/", policy).ok);
  // The allowlist is exact: the rest of 127/8 and other names stay refused.
  assert.equal(refusal("https://127.0.0.2/", policy).reason, "address");
  assert.equal(refusal("http://127.0.0.2/", policy).reason, "scheme");
  assert.equal(refusal("https://other.localhost/", policy).reason, "host-name");
  assert.equal(refusal("ftp://127.0.0.1/", policy).reason, "scheme");
  // Port 0 and userinfo are refused even for allowlisted hosts.
  assert.equal(refusal("http://127.0.0.1:0/", policy).reason, "port");
  assert.equal(refusal("http://u@127.0.0.1/", policy).reason, "userinfo");
  assert.throws(() => createEgressPolicy({ allowHosts: ["not a host!"] }), TypeError);
  assert.throws(() => createEgressPolicy({ allowedPorts: [65536] }), TypeError);
});

Deno.test("classifyAddress() refuses every range of reliability.md §6.2 and unwraps embedded IPv4", () => {
  const refused: [address: string, range: string][] = [
    ["0.0.0.0", "0.0.0.0/8"],
    ["0.255.255.255", "0.0.0.0/8"],
    ["10.1.2.3", "10.0.0.0/8"],
    ["100.64.0.1", "100.64.0.0/10"],
    ["100.127.255.255", "100.64.0.0/10"],
    ["127.0.0.1", "127.0.0.0/8"],
    ["127.255.255.254", "127.0.0.0/8"],
    ["169.254.169.254", "169.254.0.0/16"],
    ["172.16.0.1", "172.16.0.0/12"],
    ["172.31.255.255", "172.16.0.0/12"],
    ["192.0.0.8", "192.0.0.0/24"],
    ["192.0.2.1", "192.0.2.0/24"],
    ["192.168.1.1", "192.168.0.0/16"],
    ["198.18.0.1", "198.18.0.0/15"],
    ["198.19.255.255", "198.18.0.0/15"],
    ["198.51.100.7", "198.51.100.0/24"],
    ["203.0.113.9", "203.0.113.0/24"],
    ["224.0.0.1", "224.0.0.0/4"],
    ["239.255.255.250", "224.0.0.0/4"],
    ["240.0.0.1", "240.0.0.0/4"],
    ["255.255.255.255", "240.0.0.0/4"],
    ["::", "::/128"],
    ["::1", "::1/128"],
    ["::7f00:1", "::/96"],
    ["fc00::1", "fc00::/7"],
    ["fd12:3456::1", "fc00::/7"],
    ["fe80::1", "fe80::/10"],
    ["febf::1", "fe80::/10"],
    ["ff02::1", "ff00::/8"],
    ["2001:db8::1", "2001:db8::/32"],
    ["::ffff:127.0.0.1", "127.0.0.0/8 via IPv4-mapped ::ffff:0:0/96"],
    ["::ffff:10.0.0.1", "10.0.0.0/8 via IPv4-mapped ::ffff:0:0/96"],
    ["64:ff9b::7f00:1", "127.0.0.0/8 via NAT64 64:ff9b::/96"],
    ["64:ff9b::a9fe:a9fe", "169.254.0.0/16 via NAT64 64:ff9b::/96"],
    ["2002:7f00:1::", "127.0.0.0/8 via 6to4 2002::/16"],
    ["2002:c0a8:101::1", "192.168.0.0/16 via 6to4 2002::/16"],
    // Not in the §6.2 list but not unicast to ipaddr.js either: refused by its name.
    ["2001::1", "teredo"], // its client address is obfuscated: refused outright
    ["fec0::1", "deprecatedSiteLocal"],
    ["192.88.99.1", "reserved"], // 6to4 relay anycast
  ];
  for (const [address, range] of refused) {
    const verdict = classifyAddress(ipaddr.parse(address));
    assert.equal(verdict.public, false, address);
    if (!verdict.public) assert.equal(verdict.range, range, address);
  }
  const accepted = [
    "1.1.1.1",
    "8.8.8.8",
    "93.184.216.34",
    "100.63.255.255", // just below 100.64/10
    "100.128.0.0", // just above
    "172.15.255.255",
    "172.32.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:93.184.216.34",
    "64:ff9b::5db8:d822", // NAT64 of 93.184.216.34
    "2002:5db8:d822::1", // 6to4 of 93.184.216.34
  ];
  for (const address of accepted) {
    assert.deepEqual(classifyAddress(ipaddr.parse(address)), { public: true }, address);
  }
});

Deno.test("vetAddress() returns the canonical address to connect to", () => {
  const mapped = vetAddress("example.com", "::ffff:5db8:d822", strict);
  assert.ok(mapped.ok);
  assert.deepEqual(mapped.address, { address: "93.184.216.34", family: 4 });
  const v6ok = vetAddress("example.com", "2606:4700:4700:0:0:0:0:1111", strict);
  assert.ok(v6ok.ok);
  assert.deepEqual(v6ok.address, { address: "2606:4700:4700::1111", family: 6 });
  // A resolver that answers in a legacy encoding still cannot reach loopback.
  const odd = vetAddress("example.com", "127.1", strict);
  assert.ok(!odd.ok);
  assert.equal(odd.error.address, "127.1");
  assert.equal(odd.error.range, "127.0.0.0/8");
  const garbage = vetAddress("example.com", "not-an-ip", strict);
  assert.ok(!garbage.ok);
  assert.equal(garbage.error.code, "WEBHOOK_ADDRESS_REFUSED");
  const scoped = vetAddress("example.com", "fe80::1%eth0", strict);
  assert.ok(!scoped.ok);
});

Deno.test("resolveAndVet() refuses a name whose DNS answer is private", async () => {
  for (const answer of [v4("10.0.0.5"), v4("169.254.169.254"), v6("::1"), v6("fd00::2")]) {
    const { resolver, calls } = stubResolver([answer]);
    const vetted = await resolveAndVet("hooks.example.com", strict, resolver);
    assert.ok(!vetted.ok, answer.address);
    assert.equal(vetted.error.code, "WEBHOOK_ADDRESS_REFUSED");
    assert.equal(vetted.error.address, answer.address);
    assert.deepEqual(calls, ["hooks.example.com"]);
  }
});

Deno.test("resolveAndVet() refuses AAAA answers that are IPv4-mapped loopback", async () => {
  for (const address of ["::ffff:127.0.0.1", "::ffff:7f00:1", "0:0:0:0:0:ffff:7f00:0001"]) {
    const { resolver } = stubResolver([v6(address)]);
    const vetted = await resolveAndVet("hooks.example.com", strict, resolver);
    assert.ok(!vetted.ok, address);
    assert.equal(vetted.error.range, "127.0.0.0/8 via IPv4-mapped ::ffff:0:0/96");
  }
});

Deno.test("resolveAndVet() refuses mixed answers: one private answer refuses the name", async () => {
  for (
    const answers of [
      [v4("93.184.216.34"), v4("127.0.0.1")],
      [v4("127.0.0.1"), v4("93.184.216.34")],
      [v4("93.184.216.34"), v6("2606:4700:4700::1111"), v6("fe80::1")],
    ]
  ) {
    const { resolver } = stubResolver(answers);
    const vetted = await resolveAndVet("hooks.example.com", strict, resolver);
    assert.ok(!vetted.ok);
    assert.match(vetted.error.message, /one of \d answers; any private answer refuses/);
  }
  const { resolver } = stubResolver([v4("93.184.216.34"), v6("2606:4700:4700::1111")]);
  const vetted = await resolveAndVet("hooks.example.com", strict, resolver);
  assert.ok(vetted.ok);
  assert.deepEqual(vetted.address, { address: "93.184.216.34", family: 4 });
});

Deno.test("resolveAndVet() vets each lookup: public then 127.0.0.1 (rebinding) is refused the second time", async () => {
  const { resolver, calls } = stubResolver([v4("93.184.216.34")], [v4("127.0.0.1")]);
  const first = await resolveAndVet("rebind.example.com", strict, resolver);
  assert.ok(first.ok);
  assert.equal(first.address.address, "93.184.216.34");
  const second = await resolveAndVet("rebind.example.com", strict, resolver);
  assert.ok(!second.ok);
  assert.equal(second.error.range, "127.0.0.0/8");
  assert.equal(calls.length, 2);
});

Deno.test("resolveAndVet() vets IP literals without DNS and reports DNS failures", async () => {
  const { resolver, calls } = stubResolver(new Error("ENOTFOUND"));
  const literal = await resolveAndVet("2606:4700:4700::1111", strict, resolver);
  assert.ok(literal.ok);
  assert.equal(literal.address.family, 6);
  const loop = await resolveAndVet("127.0.0.1", strict, resolver);
  assert.ok(!loop.ok);
  assert.deepEqual(calls, []);

  const failed = await resolveAndVet("nx.example.com", strict, resolver);
  assert.ok(!failed.ok);
  assert.equal(failed.error.code, "WEBHOOK_DNS_FAILED");
  assert.equal((failed.error.cause as Error).message, "ENOTFOUND");

  const bad = await resolveAndVet("999.1.1.1", strict, resolver);
  assert.ok(!bad.ok);
  assert.equal(bad.error.reason, "host-name");

  const empty = await resolveAndVet("empty.example.com", strict, stubResolver([]).resolver);
  assert.ok(!empty.ok);
  assert.equal(empty.error.code, "WEBHOOK_DNS_FAILED");

  const never: Resolver = { lookup: () => new Promise(() => {}) };
  const slow = await resolveAndVet("slow.example.com", strict, never, { dnsTimeoutMs: 20 });
  assert.ok(!slow.ok);
  assert.equal(slow.error.message, "Resolving slow.example.com timed out");
});

Deno.test("resolveAndVet() with a VetMemo gives the same verdicts and still vets every DNS answer", async () => {
  const memo = new VetMemo(strict);
  const hosts = ["2606:4700:4700::1111", "93.184.216.34", "127.0.0.1", "10.1.2.3", "999.1.1.1"];
  for (const host of [...hosts, ...hosts]) {
    const { resolver } = stubResolver(new Error("ENOTFOUND"));
    const plain = await resolveAndVet(host, strict, resolver);
    const remembered = await resolveAndVet(host, strict, resolver, { memo });
    assert.deepEqual(remembered, plain, host);
  }
  // A remembered verdict is per address, never per name: the second answer is vetted anew.
  const { resolver } = stubResolver([v4("93.184.216.34")], [v4("127.0.0.1")]);
  assert.ok((await resolveAndVet("rebind.example.com", strict, resolver, { memo })).ok);
  const second = await resolveAndVet("rebind.example.com", strict, resolver, { memo });
  assert.ok(!second.ok);
  assert.equal(second.error.range, "127.0.0.0/8");
  const other = createEgressPolicy({ allowHosts: ["127.0.0.1/32"] });
  await assert.rejects(
    () => resolveAndVet("127.0.0.1", other, resolver, { memo }),
    /another policy/,
  );
});

Deno.test("resolveAndVet() lets allowlisted names and ranges through", async () => {
  const byRange = createEgressPolicy({ allowHosts: ["127.0.0.1/32"] });
  const { resolver } = stubResolver([v4("127.0.0.1")]);
  const ok = await resolveAndVet("receiver.invalid", byRange, resolver);
  assert.ok(ok.ok);
  assert.equal(ok.address.address, "127.0.0.1");
  // The range allows 127.0.0.1 only: another loopback answer is still refused.
  const other = await resolveAndVet(
    "receiver.invalid",
    byRange,
    stubResolver([v4("127.0.0.2")]).resolver,
  );
  assert.ok(!other.ok);

  const byName = createEgressPolicy({ allowHosts: ["receiver.invalid"] });
  for (const host of ["receiver.invalid", "RECEIVER.invalid."]) {
    const named = await resolveAndVet(host, byName, stubResolver([v6("::1")]).resolver);
    assert.ok(named.ok, host);
    assert.deepEqual(named.address, { address: "::1", family: 6 });
  }
  const unnamed = await resolveAndVet("other.invalid", byName, stubResolver([v6("::1")]).resolver);
  assert.ok(!unnamed.ok);
});

Deno.test("createCachingResolver() shares lookups, expires them, forgets failures and bounds entries", async () => {
  let nowMs = 0;
  const { resolver: inner, calls } = stubResolver(
    [v4("93.184.216.34")],
    new Error("SERVFAIL"),
    [v4("127.0.0.1")],
  );
  const cached = createCachingResolver(inner, { nowMs: () => nowMs, cacheMs: 1000, entriesMax: 2 });
  const [a, b] = await Promise.all([cached.lookup("a.example"), cached.lookup("a.example")]);
  assert.deepEqual(a, [v4("93.184.216.34")]);
  assert.equal(a, b);
  nowMs = 999;
  await cached.lookup("a.example");
  assert.deepEqual(calls, ["a.example"]);
  nowMs = 1000; // expired
  await assert.rejects(cached.lookup("a.example"), /SERVFAIL/);
  await Promise.resolve();
  // The failure is not kept, and the rebinding answer that follows is still vetted.
  const vetted = await resolveAndVet("a.example", strict, cached);
  assert.ok(!vetted.ok);
  assert.equal(vetted.error.range, "127.0.0.0/8");
  assert.equal(calls.length, 3);
  // entriesMax 2: a third name evicts the oldest.
  await cached.lookup("b.example");
  await cached.lookup("c.example");
  await cached.lookup("b.example");
  assert.equal(calls.length, 5);
  await cached.lookup("a.example");
  assert.equal(calls.length, 6);
});

Deno.test("createSystemResolver() resolves through the OS (localhost from /etc/hosts) and is vetted", async () => {
  const resolver = createSystemResolver();
  const answers = await resolver.lookup("localhost");
  assert.ok(answers.length > 0);
  for (const answer of answers) assert.ok(answer.family === 4 || answer.family === 6);
  const vetted = await resolveAndVet("localhost", strict, resolver);
  assert.ok(!vetted.ok);
  assert.equal(vetted.error.code, "WEBHOOK_ADDRESS_REFUSED");
});

Deno.test("postPinned() connects to the vetted address, never re-resolving the name (DNS rebinding)", async () => {
  const hosts: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    hosts.push(request.headers.get("host") ?? "");
    return new Response("ok");
  });
  const policy = createEgressPolicy({
    allowHttp: true,
    allowedPorts: [server.addr.port],
    allowHosts: ["127.0.0.1/32"],
  });
  // The system resolver cannot resolve receiver.invalid; only the stub maps it, first to
  // the allowlisted receiver, then (rebinding) to an address the policy refuses.
  const { resolver, calls } = stubResolver([v4("127.0.0.1")], [v4("192.0.2.1")]);
  const client = new H1WebhookClient({ policy });
  try {
    const url = `http://receiver.invalid:${server.addr.port}/hook`;
    const target = checkWebhookUrl(url, policy);
    assert.ok(target.ok);
    assert.equal(target.allowlisted, false);
    const vetted = await resolveAndVet(target.host, policy, resolver);
    assert.ok(vetted.ok);
    for (let i = 0; i < 2; i++) {
      const outcome = await client.postPinned({ url, address: vetted.address, body: "{}" });
      assert.ok(outcome.ok, outcome.ok ? "" : outcome.error.message);
      assert.equal(outcome.status, 200);
    }
    assert.deepEqual(hosts, [
      `receiver.invalid:${server.addr.port}`,
      `receiver.invalid:${server.addr.port}`,
    ]);
    assert.equal(calls.length, 1, "postPinned must not resolve the name again");
    const again = await resolveAndVet(target.host, policy, resolver);
    assert.ok(!again.ok);
    assert.equal(again.error.range, "192.0.2.0/24");
    // An address that was never vetted is refused before any connection is made.
    const unvetted = { address: "192.0.2.1", family: 4 } as const;
    const refused = await client.postPinned({ url, address: unvetted, body: "{}" });
    assert.ok(!refused.ok);
    assert.equal(refused.error.code, "refused-address");
    assert.equal(hosts.length, 2);
  } finally {
    await client.close();
    await server.shutdown();
  }
});
