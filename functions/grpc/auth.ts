// Who is calling (docs/grpc.md, "Auth"): RocketMQ 5's signed metadata over our API keys.
// The client's session credentials are accessKey = the API key's name and accessSecret =
// the key itself; the client signs `x-mq-date-time` with HMAC-SHA1 keyed by the secret
// (reference/rocketmq-grpc.md §2), so the key never crosses the wire. `authorization:
// Bearer <key>` (the HTTP API's header) is accepted too. The rights are the HTTP API's.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Metadata } from "@grpc/grpc-js";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { ApiKeyConfig } from "../../runtime/protocol/types.ts";
import { Authenticator, type Principal, type Right } from "../auth.ts";

const SIGNED =
  /^MQv2-HMAC-SHA1 Credential=([^,/ ]+)[^,]*, ?SignedHeaders=([^,]+), ?Signature=([0-9A-Fa-f]{40})$/;

/** One caller: its client id and namespace (metadata) and its principal. */
export interface Caller {
  clientId: string;
  namespace: string;
  principal: Principal;
}

export class GrpcAuth {
  #byName = new Map<string, ApiKeyConfig[]>();
  /** The last signature verified per key name: a client signs `x-mq-date-time`, whose
   * resolution is a second, so its calls within a second carry the same two headers and
   * skip the HMAC. One entry per key, so bounded by the configured keys. */
  #lastVerified = new Map<string, { authorization: string; dateTime: string; key: ApiKeyConfig }>();

  private constructor(readonly rights: Authenticator, keys: ApiKeyConfig[]) {
    for (const k of keys) this.#byName.set(k.name, [...this.#byName.get(k.name) ?? [], k]);
  }

  static async create(keys: ApiKeyConfig[]): Promise<GrpcAuth> {
    return new GrpcAuth(await Authenticator.create(keys), keys);
  }

  /** The caller of a request; throws UNAUTHORIZED for missing or wrong credentials. */
  async caller(metadata: Metadata): Promise<Caller> {
    const text = (name: string) => {
      const v = metadata.get(name)[0];
      return typeof v === "string" ? v : v === undefined ? "" : v.toString();
    };
    const clientId = text("x-mq-client-id");
    const namespace = text("x-mq-namespace");
    if (this.rights.open) {
      return { clientId, namespace, principal: { name: "anonymous", key: undefined } };
    }
    const authorization = text("authorization");
    if (authorization.startsWith("Bearer ")) {
      return { clientId, namespace, principal: await this.rights.authenticate(authorization) };
    }
    const m = SIGNED.exec(authorization);
    if (!m) {
      throw new BrokerError(
        "UNAUTHORIZED",
        "Cannot authenticate: set the client's session credentials (accessKey = API key name, accessSecret = API key)",
      );
    }
    const [, name, signedHeaders, signature] = m;
    const dateTime = text("x-mq-date-time");
    if (signedHeaders.trim() !== "x-mq-date-time" || !dateTime) {
      throw new BrokerError("UNAUTHORIZED", "Cannot authenticate: sign x-mq-date-time");
    }
    const last = this.#lastVerified.get(name);
    if (last && last.authorization === authorization && last.dateTime === dateTime) {
      return { clientId, namespace, principal: { name, key: last.key } };
    }
    const given = Buffer.from(signature.toUpperCase());
    for (const key of this.#byName.get(name) ?? []) {
      const expected = Buffer.from(
        createHmac("sha1", key.key).update(dateTime).digest("hex").toUpperCase(),
      );
      if (timingSafeEqual(expected, given)) {
        this.#lastVerified.set(name, { authorization, dateTime, key });
        return { clientId, namespace, principal: { name: key.name, key } };
      }
    }
    throw new BrokerError("UNAUTHORIZED", `Cannot authenticate: wrong signature for key ${name}`);
  }

  /** Throws FORBIDDEN unless the caller holds `right` on the resources. */
  allow(caller: Caller, right: Right, resources: { topic?: string; group?: string }): void {
    this.rights.authorize(caller.principal, right, resources);
  }
}
