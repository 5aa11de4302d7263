import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { vendorText } from "../../scripts/vendor_uplot.ts";

Deno.test("the vendored uPlot matches node_modules/uplot (re-run scripts/vendor_uplot.ts)", () => {
  const committed = readFileSync(new URL("./uplot_vendor.ts", import.meta.url), "utf8");
  assert.ok(committed === vendorText(), "functions/dashboard/uplot_vendor.ts is stale");
});
