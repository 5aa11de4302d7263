// The web dashboard at /dashboard: static assets held in the app (functions/dashboard/),
// open like any static page. The page's script reaches the API with the admin key the user
// gives, so the dashboard has exactly the API's auth.
import { createRoute, z } from "@hono/zod-openapi";
import { APP_JS } from "../dashboard/app_js.ts";
import { APP_CSS, INDEX_HTML } from "../dashboard/page.ts";
import { UPLOT_CSS, UPLOT_JS } from "../dashboard/uplot_vendor.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import { newRoutes, REFUSALS, type Routes, serve } from "./route.ts";

const ASSETS: Record<string, [string, string]> = {
  "app.js": [APP_JS, "text/javascript; charset=utf-8"],
  "app.css": [APP_CSS, "text/css; charset=utf-8"],
  "uplot.js": [UPLOT_JS, "text/javascript; charset=utf-8"],
  "uplot.css": [UPLOT_CSS, "text/css; charset=utf-8"],
};

const page = createRoute({
  method: "get",
  path: "/dashboard",
  operationId: "dashboard",
  tags: ["dashboard"],
  summary: "The web dashboard (HTML; its script asks for an admin key)",
  security: [],
  responses: { 200: { description: "HTML", content: { "text/html": { schema: z.string() } } } },
});

const asset = createRoute({
  method: "get",
  path: "/dashboard/{asset}",
  operationId: "dashboardAsset",
  tags: ["dashboard"],
  summary: "The dashboard's script, styles and chart library",
  security: [],
  request: { params: z.object({ asset: z.enum(Object.keys(ASSETS) as [string, ...string[]]) }) },
  responses: {
    200: { description: "Asset", content: { "text/plain": { schema: z.string() } } },
    404: REFUSALS[404],
  },
});

const SECURITY_HEADERS = {
  "cache-control": "no-cache",
  "x-content-type-options": "nosniff",
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
};

export function dashboardRoutes(): Routes {
  const app = newRoutes();
  serve(
    app,
    page,
    (c) =>
      c.body(INDEX_HTML, 200, { ...SECURITY_HEADERS, "content-type": "text/html; charset=utf-8" }),
  );
  serve(app, asset, (c) => {
    const found = ASSETS[c.req.param("asset") ?? ""];
    if (!found) {
      throw new BrokerError("ROUTE_NOT_FOUND", `No dashboard asset ${c.req.param("asset")}`);
    }
    return c.body(found[0], 200, { ...SECURITY_HEADERS, "content-type": found[1] });
  });
  return app;
}
