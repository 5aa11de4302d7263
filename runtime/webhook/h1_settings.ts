// The settings of an H1WebhookClient with every default applied: what its pools,
// connections and attempts read; a leaf module, so the three need not import each other.
/** What every pool, connection and attempt needs from its client. */
export interface Settings {
  readonly connectTimeoutMs: number;
  readonly totalTimeoutMs: number;
  readonly bodyPrefixBytes: number;
  readonly responseBytesMax: number;
  readonly responseHeaderBytesMax: number;
  readonly connectionsPerAddressMax: number;
  readonly idleConnectionMs: number;
  readonly targetsCachedMax: number;
  readonly userAgent: string;
  readonly nowMs: () => number;
  readonly caCerts: string[] | undefined;
}
