// Bun's fetchTrusting (platform.ts). Bun's `tls.ca` replaces the roots, as node:tls's does,
// and Bun reads the option on every request: the CA alone costs an HTTPS fetch little, the
// ~120 roots added cost it about 3× as much (bench/README.md, "Broker link over HTTPS"). So
// each call goes out trusting the CA alone; an origin whose certificate that does not verify
// (a broker with a public CA's certificate) is retried, and from then on called, trusting
// the roots as well. A refused handshake sent no request, so the retry repeats nothing.
import { nodeTls } from "../protocol/node_builtins.ts";
import type { TrustingFetch } from "./platform.ts";

/** BoringSSL's verdicts for a chain that no trusted CA signed (not a wrong name or date). */
const UNTRUSTED =
  /^(UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_UNTRUSTED)/;

/** `roots`: the runtime's, unless a test gives others. */
export function bunFetchTrusting(
  caPem: string,
  roots: readonly string[] = nodeTls().rootCertificates,
): TrustingFetch {
  const own = { ca: caPem };
  const withRoots = { ca: [...roots, caPem].join("\n") };
  /** Origins that needed the roots; as many as the brokers called. */
  const rootsFor = new Set<string>();
  const call = (input: RequestInfo | URL, init: RequestInit | undefined, tls: { ca: string }) => {
    const options: RequestInit & { tls: { ca: string } } = { ...init, tls };
    return fetch(input, options);
  };
  const trusting: typeof fetch = async (input, init) => {
    // A Request or a streamed body may be read by the first try: no retry for those.
    const origin = typeof input === "string" || input instanceof URL
      ? new URL(input).origin
      : undefined;
    if (origin !== undefined && rootsFor.has(origin)) return await call(input, init, withRoots);
    try {
      return await call(input, init, own);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (
        origin === undefined || init?.body instanceof ReadableStream ||
        typeof code !== "string" || !UNTRUSTED.test(code)
      ) throw err;
      rootsFor.add(origin);
      return await call(input, init, withRoots);
    }
  };
  return Object.assign(trusting, { close: () => {} });
}
