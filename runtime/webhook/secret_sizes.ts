// The sizes of a Standard Webhooks signing secret, apart from signing.ts so the cluster
// router can make one (runtime/cluster/secrets.ts) without loading node:crypto at start.

/** Standard Webhooks: secrets of 24 to 64 random bytes. */
export const SECRET_BYTES_MIN = 24;
export const SECRET_BYTES_MAX = 64;
