// Copies uPlot (the dashboard's chart library, node_modules/uplot) into
// functions/dashboard/uplot_vendor.ts as two strings, so the dashboard is served from the
// app itself on every platform (Deno, Bun, Deploy, edge runtimes) with no file reads and
// no build step at run time. Re-run after upgrading uplot:
//   deno run -A scripts/vendor_uplot.ts
// functions/dashboard/uplot_vendor_test.ts fails when the copy is stale.
import { readFileSync, writeFileSync } from "node:fs";

const root = new URL("../", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("node_modules/uplot/package.json", root), "utf8"));
const js = readFileSync(new URL("node_modules/uplot/dist/uPlot.iife.min.js", root), "utf8");
const css = readFileSync(new URL("node_modules/uplot/dist/uPlot.min.css", root), "utf8");

export function vendorText(): string {
  return [
    `// uPlot ${pkg.version} (MIT, https://github.com/leeoniya/uPlot), vendored by`,
    "// scripts/vendor_uplot.ts from node_modules/uplot/dist. Do not edit: re-run the script.",
    "// deno-fmt-ignore-file",
    "// deno-lint-ignore-file",
    `export const UPLOT_VERSION = ${JSON.stringify(pkg.version)};`,
    `export const UPLOT_JS = ${JSON.stringify(js)};`,
    `export const UPLOT_CSS = ${JSON.stringify(css)};`,
    "",
  ].join("\n");
}

if (import.meta.main) {
  writeFileSync(new URL("functions/dashboard/uplot_vendor.ts", root), vendorText());
  console.log(`vendored uPlot ${pkg.version}`);
}
