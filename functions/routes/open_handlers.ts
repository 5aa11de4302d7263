// The handlers of the open routes (health, readiness, metrics, a replica's HA status), apart
// from their declarations (health.ts, ha.ts, with zod): the entry files serve them before zod
// loads (app.ts, lazy).
import type { AdminApi } from "../../runtime/protocol/core_api.ts";
import type { HaApi } from "../../runtime/protocol/ha_api.ts";
import type { ReadinessInfo } from "../../runtime/protocol/ops_types.ts";
import type { ApiSource } from "./api_source.ts";
import type { RouteContext } from "./route.ts";

export interface HealthDeps {
  api: ApiSource<Pick<AdminApi, "health">>;
  metrics?: () => string | Promise<string>;
  /** Where the process is in starting; absent means ready whenever it answers. */
  readiness?: () => ReadinessInfo;
}

type Handler = (c: RouteContext) => Response | Promise<Response>;

/** GET /healthz, /readyz and /metrics. */
export function healthHandlers(
  deps: HealthDeps,
): { health: Handler; ready: Handler; metrics: Handler } {
  return {
    health: async (c) => c.json(await deps.api.call((b) => b.health())),
    ready: (c) => {
      const r = deps.readiness?.() ?? { ready: true, phase: "ready" as const };
      return c.json(r, r.ready ? 200 : 503);
    },
    metrics: async (c) =>
      c.text(await deps.metrics?.() ?? "", 200, { "content-type": "text/plain; version=0.0.4" }),
  };
}

/** GET HA_STATUS_PATH: who leads, open to all. */
export function haStatusHandler(ha: HaApi): Handler {
  return (c) => c.json(ha.status());
}
