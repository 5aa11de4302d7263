// A replicated group's own routes: who leads (open: no secrets), and the metadata a slave
// copies from its master (admin only: it holds webhook secrets).
import { createRoute, z } from "@hono/zod-openapi";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import {
  HA_STATUS_PATH,
  type HaApi,
  METADATA_SNAPSHOT_PATH,
} from "../../runtime/protocol/ha_api.ts";
import { json, newRoutes, REFUSALS, type RouteDeps, type Routes, serve } from "./route.ts";
import { HaStatus } from "./wire_schemas.ts";
import { haStatusHandler } from "./open_handlers.ts";

const TAGS = ["ha"];

const status = createRoute({
  method: "get",
  path: HA_STATUS_PATH,
  operationId: "haStatus",
  tags: TAGS,
  summary: "This replica's role, epoch and offsets, and who the master is",
  security: [],
  responses: { 200: json("Replica status", HaStatus), 500: REFUSALS[500] },
});

const snapshot = createRoute({
  method: "get",
  path: METADATA_SNAPSHOT_PATH,
  operationId: "haMetadataSnapshot",
  tags: TAGS,
  summary: "The master's metadata (topics, groups, offsets, subscriptions) for its slaves",
  responses: {
    200: json(
      "Metadata snapshot (runtime/ha/metadata_sync.ts)",
      z.record(z.string(), z.unknown()).openapi("MetadataSnapshot"),
    ),
    ...REFUSALS,
  },
});

/** Who leads, open to all: mount before the API key middleware. */
export function haStatusRoutes(ha: HaApi): Routes {
  const app = newRoutes();
  serve(app, status, haStatusHandler(ha));
  return app;
}

export function haSnapshotRoutes(ha: HaApi, deps: Pick<RouteDeps<unknown>, "allow">): Routes {
  const app = newRoutes();
  serve(app, snapshot, async (c) => {
    deps.allow(c, "admin");
    let bytes: Uint8Array;
    try {
      bytes = await ha.metadataSnapshot();
    } catch (err) {
      // A replica that cannot export (stopping, store closed) is unavailable to the slave,
      // which tries again; it is not a bug of this request.
      throw err instanceof BrokerError ? err : new BrokerError("BROKER_UNAVAILABLE", String(err));
    }
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { "content-type": "application/json" });
  });
  return app;
}
