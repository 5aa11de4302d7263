// RocketMQ ACL on the remoting port, mapped onto our API keys (docs/remoting.md, "Auth"):
// a client signs each request with its access key = the API key's name and its secret key =
// the API key itself. The signature is RocketMQ's (AclClientRPCHook, and ali-ons'
// Channel.beforeRequest): base64 HMAC-SHA1 over the ext field values sorted by field name
// (Signature left out) followed by the body. With no keys configured the port is open.
import { nodeCrypto } from "../../runtime/protocol/node_builtins.ts";
import { BrokerError } from "../../runtime/protocol/errors.ts";
import type { ApiKeyConfig } from "../../runtime/protocol/types.ts";
import type { Authenticator, Principal, Right } from "../auth.ts";
import type { RemotingCommand } from "./codec.ts";

export class RemotingAuth {
  readonly #byName = new Map<string, ApiKeyConfig>();

  constructor(keys: ApiKeyConfig[], private readonly rights: Authenticator) {
    for (const k of keys) this.#byName.set(k.name, k);
  }

  get open(): boolean {
    return this.rights.open;
  }

  /** The signer of `req`; NO_PERMISSION (FORBIDDEN) when unsigned or badly signed. */
  authenticate(req: RemotingCommand): Principal {
    if (this.rights.open) return { name: "anonymous", key: undefined };
    const accessKey = req.extFields.AccessKey;
    const signature = req.extFields.Signature;
    if (!accessKey || !signature) {
      throw new BrokerError(
        "UNAUTHORIZED",
        "Cannot authenticate: sign requests with AccessKey (API key name) and Signature",
      );
    }
    const key = this.#byName.get(accessKey);
    const expected = key ? sign(req, key.key) : "";
    const a = new TextEncoder().encode(expected), b = new TextEncoder().encode(signature);
    if (!key || a.length !== b.length || !nodeCrypto().timingSafeEqual(a, b)) {
      throw new BrokerError("UNAUTHORIZED", `Cannot authenticate access key ${accessKey}`);
    }
    return { name: key.name, key };
  }

  authorize(
    principal: Principal,
    right: Right,
    resources: { topic?: string; group?: string },
  ): void {
    this.rights.authorize(principal, right, resources);
  }
}

/** RocketMQ's request signature with `secret`. */
export function sign(req: RemotingCommand, secret: string): string {
  const names = Object.keys(req.extFields).filter((k) => k !== "Signature").sort();
  const hmac = nodeCrypto().createHmac("sha1", secret);
  hmac.update(names.map((k) => req.extFields[k]).join(""), "utf8");
  if (req.body?.length) hmac.update(req.body);
  return hmac.digest("base64");
}
