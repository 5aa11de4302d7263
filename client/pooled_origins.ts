// Which origins this process may hold a kept-alive connection to. A fetch that reuses a
// pooled connection the server has just closed may send the request again on a new
// connection on its own: Deno's does, after the server read the whole request (seen when a
// broker is killed mid-call: docs/cluster.md, client/http_test.ts). If that second
// connect is refused, the error says "connect failed" although the first copy reached the
// server. So a refused connect proves nothing was sent only when no connection to the
// origin can be in the pool: none answered within the pool's idle time.

/** How long after an answer a pooled connection may still be reused, ms (Deno's client,
 * hyper-util, keeps idle connections 90 s). */
export const POOLED_CONNECTION_WINDOW_MS_DEFAULT = 120_000;

/** Origins tracked at most; the oldest answer is forgotten first. */
const ORIGINS_MAX = 1024;

/** Origin → when it last answered (ms). Module-wide: the runtime's pool is. */
const answeredAt = new Map<string, number>();

/** Records an answer from `origin`; refreshed at most once a second per origin. */
export function noteAnswer(origin: string, nowMs = Date.now()): void {
  const last = answeredAt.get(origin);
  if (last !== undefined && nowMs - last < 1000) return;
  answeredAt.delete(origin);
  answeredAt.set(origin, nowMs);
  if (answeredAt.size > ORIGINS_MAX) answeredAt.delete(answeredAt.keys().next().value!);
}

/** True when a connection to `origin` may sit in the runtime's pool. */
export function mayHavePooledConnection(
  origin: string,
  windowMs = POOLED_CONNECTION_WINDOW_MS_DEFAULT,
  nowMs = Date.now(),
): boolean {
  const last = answeredAt.get(origin);
  return last !== undefined && nowMs - last < windowMs;
}
