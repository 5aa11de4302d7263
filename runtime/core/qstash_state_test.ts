import assert from "node:assert/strict";
import { SimDisk } from "../../storage/sim_disk.ts";
import { writeFileAtomic } from "../../storage/file_port.ts";
import { loadQstashState, type QstashStatePort } from "./qstash_state.ts";

function memoryState(): QstashStatePort & { rows: Map<string, unknown> } {
  const rows = new Map<string, unknown>();
  return {
    rows,
    get: (name) => Promise.resolve(rows.get(name)),
    put: (name, value) => Promise.resolve(void rows.set(name, value)),
  };
}

Deno.test("loadQstashState moves a legacy file into the table once; the table wins", async () => {
  const files = new SimDisk();
  files.mkdirp("/data");
  const path = "/data/qstash_keys.json";
  const keys = { current: "sig_a", next: "sig_b" };
  await writeFileAtomic(files, path, new TextEncoder().encode(JSON.stringify(keys)));
  const state = memoryState();
  assert.deepEqual(await loadQstashState(state, "signing_keys", { files, path }), keys);
  assert.deepEqual(state.rows.get("signing_keys"), keys);
  assert.equal(files.exists(path), false, "the legacy file is removed once moved");

  await state.put("signing_keys", { current: "sig_c", next: "sig_d" });
  assert.deepEqual(await loadQstashState(state, "signing_keys", { files, path }), {
    current: "sig_c",
    next: "sig_d",
  });
  assert.equal(await loadQstashState(memoryState(), "none", { files, path }), undefined);
});
