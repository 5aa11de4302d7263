// Bearer API keys with publish / subscribe / admin rights per topic and group
// (reliability.md §6.3: default deny, deny beats allow). With no keys configured the API
// is open: the local default, which logs a warning at start.
import { BrokerError } from "../runtime/protocol/errors.ts";
import type { ApiKeyConfig } from "../runtime/protocol/types.ts";

/** "see": read a topic's metadata (its configuration, its cron schedules): publish or
 * subscribe on the topic, or admin. */
export type Right = "publish" | "subscribe" | "admin" | "see";

export interface Principal {
  name: string;
  key: ApiKeyConfig | undefined;
}

export class Authenticator {
  #byDigest = new Map<string, ApiKeyConfig>();
  readonly open: boolean;

  private constructor(keys: ApiKeyConfig[]) {
    this.open = keys.length === 0;
  }

  /** Keys are kept by SHA-256 digest, so lookups do not compare secrets byte by byte. */
  static async create(keys: ApiKeyConfig[]): Promise<Authenticator> {
    const auth = new Authenticator(keys);
    for (const k of keys) auth.#byDigest.set(await digest(k.key), k);
    return auth;
  }

  async authenticate(authorization: string | null | undefined): Promise<Principal> {
    if (this.open) return { name: "anonymous", key: undefined };
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization ?? "");
    if (!match) {
      throw new BrokerError(
        "UNAUTHORIZED",
        "Cannot authenticate: send Authorization: Bearer <api key>",
      );
    }
    const key = this.#byDigest.get(await digest(match[1]));
    if (!key) throw new BrokerError("UNAUTHORIZED", "Cannot authenticate: unknown API key");
    return { name: key.name, key };
  }

  /** Throws FORBIDDEN unless the principal holds `right` on every named resource. */
  authorize(
    principal: Principal,
    right: Right,
    resources: { topic?: string; group?: string } = {},
  ) {
    if (this.permits(principal, right, resources)) return;
    const names = [resources.topic, resources.group].filter((x): x is string => x !== undefined);
    throw new BrokerError(
      "FORBIDDEN",
      `API key ${principal.key!.name} lacks ${right} on ${names.join(", ") || "this resource"}`,
    );
  }

  /** Whether the principal holds `right` on every named resource (lists filter with it). */
  permits(
    principal: Principal,
    right: Right,
    resources: { topic?: string; group?: string } = {},
  ): boolean {
    if (this.open) return true;
    const key = principal.key!;
    if (key.admin) return true;
    if (right === "admin") return false;
    const names = [resources.topic, resources.group].filter((x): x is string => x !== undefined);
    const holds = (patterns: string[] | undefined) =>
      patterns !== undefined && names.every((n) => patterns.some((p) => matches(p, n)));
    if (right === "see") {
      // A list item always names its topic; a nameless "see" would let anything through.
      return names.length > 0 && (holds(key.publish) || holds(key.subscribe));
    }
    return holds(right === "publish" ? key.publish : key.subscribe);
  }
}

function matches(pattern: string, name: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

async function digest(text: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
