// A signing secret made once by the router for a broadcast write (webhook subscriptions,
// transaction-check URLs): each broker group would otherwise make its own, and deliveries
// from different groups would be signed with different keys.
import { SECRET_BYTES_MIN } from "../webhook/secret_sizes.ts";

export function newSigningSecret(): string {
  const key = crypto.getRandomValues(new Uint8Array(SECRET_BYTES_MIN));
  return "whsec_" + btoa(String.fromCharCode(...key));
}
