// Writes docs/configuration.md from the settings table:
//   deno run -A scripts/gen_config_docs.ts
// runtime/config/render_test.ts fails while the committed file differs from the table.
import { configurationMarkdown } from "../runtime/config.ts";

const path = new URL("../docs/configuration.md", import.meta.url);
await Deno.mkdir(new URL(".", path), { recursive: true });
await Deno.writeTextFile(path, configurationMarkdown());
console.log(`wrote ${path.pathname}`);
