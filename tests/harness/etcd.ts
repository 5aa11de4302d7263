// A throwaway etcd for tests: the launcher's module (tools/cluster/etcd.ts), shared by the
// local cluster and the tests.
export * from "../../tools/cluster/etcd.ts";
