// What `deno task start` and `npm run start:bun` run: the broker (runtime/main.ts) from its
// esbuild bundle under dist/ when that is fresh (scripts/install.sh builds it; the rule is in
// runtime/bundle_stamp.ts), else from the sources. Same flags, environment and output.
import { startEntry } from "./bundle_stamp.ts";

await startEntry("runtime/main.ts");
