// Spawning real Deno and Bun processes: the launcher's module (tools/cluster/process.ts),
// shared by the local cluster and the tests.
export * from "../../tools/cluster/process.ts";
