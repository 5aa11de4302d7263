// The split-mode functions process (functions/main.ts) from its esbuild bundle under dist/
// when that is fresh (runtime/bundle_stamp.ts), else from the sources: `deno run -A
// functions/start.ts` or `bun run functions/start.ts`, same environment and output.
import { startEntry } from "../runtime/bundle_stamp.ts";

await startEntry("functions/main.ts");
