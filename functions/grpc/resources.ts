// Resources and namespaces (docs/grpc.md, "Resources"): RocketMQ 5 names a topic or group
// by {resource_namespace, name}; ours is one name. A namespace becomes a prefix as in
// RocketMQ 4 (`ns%name`), so a namespaced client sees only its own topics and groups.
// Node fills resource_namespace only on some requests and always sends the namespace in
// the x-mq-namespace header (reference/rocketmq-grpc.md §2), so the header wins.
import { BrokerError } from "../../runtime/protocol/errors.ts";

export interface Resource {
  resourceNamespace?: string;
  name?: string;
}

export class Names {
  /** Our name for a resource of a request; throws INVALID_NAME when it has none. */
  inward(resource: Resource | undefined | null, namespace: string, what: string): string {
    const name = resource?.name ?? "";
    if (!name) throw new BrokerError("INVALID_NAME", `Cannot serve the request: no ${what} named`);
    const ns = namespace || resource?.resourceNamespace || "";
    return ns ? `${ns}%${name}` : name;
  }

  /** The Resource of one of our names, as a client of `namespace` knows it. */
  outward(name: string, namespace: string): Resource {
    const prefix = namespace ? `${namespace}%` : "";
    return prefix && name.startsWith(prefix)
      ? { resourceNamespace: namespace, name: name.slice(prefix.length) }
      : { resourceNamespace: namespace, name };
  }
}
