// Whether a refused connect proves a request never reached the broker. A fetch that
// reuses a kept-alive connection the server has just closed may send the request again on
// a new connection by itself: Deno's does, even after the server read the whole request
// (seen when a broker is killed mid-call: docs/cluster.md, client/http_test.ts). If that
// second connect is refused, the error says "connect failed" although the first copy
// reached the server. The server can only have read a request sent before it went away,
// and it went away no later than the first failure seen from it; and it can only have
// read it over a pooled connection, which exists only after an answer. So a refused
// connect proves nothing was sent when the origin has not answered within the pool's idle
// time, or when the request started after a failure already seen since the last answer.

/** How long after an answer a pooled connection may still be reused, ms (Deno's client,
 * hyper-util, keeps idle connections 90 s). */
export const POOLED_CONNECTION_WINDOW_MS_DEFAULT = 120_000;

/** Origins tracked at most; the least recently heard of is forgotten first. */
const ORIGINS_MAX = 1024;

interface OriginState {
  /** When it last answered (ms). */
  answeredAt: number;
  /** The first network failure seen since then (ms), if any. */
  failingSince?: number;
}

/** Module-wide, as the runtime's connection pool is. */
const origins = new Map<string, OriginState>();

function remember(origin: string, state: OriginState): void {
  origins.delete(origin);
  origins.set(origin, state);
  if (origins.size > ORIGINS_MAX) origins.delete(origins.keys().next().value!);
}

/** Records an answer from `origin` (refreshed at most once a second while healthy). */
export function noteAnswer(origin: string, nowMs = Date.now()): void {
  const s = origins.get(origin);
  if (s !== undefined && s.failingSince === undefined && nowMs - s.answeredAt < 1000) return;
  remember(origin, { answeredAt: nowMs });
}

/** Records a network failure of a call to `origin` (after it was classified). */
export function noteFailure(origin: string, nowMs = Date.now()): void {
  const s = origins.get(origin);
  if (s !== undefined && s.failingSince === undefined) s.failingSince = nowMs;
}

/** True when a refused connect of a call to `origin` that started at `startedAtMs` proves
 * the call never reached it (no pooled connection can have carried it first). */
export function refusedProvesNotSent(
  origin: string,
  startedAtMs: number,
  windowMs = POOLED_CONNECTION_WINDOW_MS_DEFAULT,
  nowMs = Date.now(),
): boolean {
  const s = origins.get(origin);
  if (s === undefined || nowMs - s.answeredAt >= windowMs) return true;
  return s.failingSince !== undefined && startedAtMs > s.failingSince;
}
