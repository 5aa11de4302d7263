// The rendered table: docs/configuration.md is what the table generates, and --help has a
// line for every setting.
import assert from "node:assert/strict";
import { configurationMarkdown, settingsHelp } from "./render.ts";
import { SETTINGS } from "./table.ts";

Deno.test("configurationMarkdown() is docs/configuration.md (run scripts/gen_config_docs.ts)", async () => {
  const committed = await Deno.readTextFile(
    new URL("../../docs/configuration.md", import.meta.url),
  );
  assert.equal(committed, configurationMarkdown());
});

Deno.test("configurationMarkdown() has a table row for every setting", () => {
  const doc = configurationMarkdown();
  for (const row of SETTINGS) {
    assert.match(doc, new RegExp(`\\| \`${row.name}\` +\\| \`${row.env}\` +\\| \`${row.flag}\``));
  }
});

Deno.test("settingsHelp() gives each setting's flag, variable, doc and default on one line", () => {
  const lines = settingsHelp().split("\n");
  assert.equal(lines.length, SETTINGS.length);
  SETTINGS.forEach((row, i) => {
    const [flag, env] = lines[i].trim().split(/ +/, 2);
    assert.deepEqual([flag, env], [row.flag, row.env]);
    assert.ok(lines[i].includes(row.doc), lines[i]);
    assert.ok(lines[i].includes(`Default ${row.defaultText}`), lines[i]);
  });
  assert.match(lines.find((l) => l.includes("--pull-wait-ms-max"))!, /Default 15000 ms\.$/);
});
