// Why a webhook target is refused: the error every SSRF check returns (its code is stable)
// and the wording of each refusal, kept apart so every check words the same reason alike.
export type WebhookTargetErrorCode =
  | "WEBHOOK_URL_REFUSED" // scheme, userinfo, port, malformed or refused host name
  | "WEBHOOK_ADDRESS_REFUSED" // an IP literal or a DNS answer outside public unicast
  | "WEBHOOK_DNS_FAILED"; // the name did not resolve (in time)

export type WebhookTargetRefusal =
  | "invalid-url"
  | "url-too-long"
  | "scheme"
  | "userinfo"
  | "port"
  | "host-name"
  | "address"
  | "dns";

/** Why a webhook target was refused. `code` is stable; `message` names the reason. */
export class WebhookTargetError extends Error {
  constructor(
    readonly code: WebhookTargetErrorCode,
    readonly reason: WebhookTargetRefusal,
    message: string,
    /** For "address": the refused address and the range it fell in, e.g. "127.0.0.0/8". */
    readonly address?: string,
    readonly range?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "WebhookTargetError";
  }
}

export type Checked<T> = ({ readonly ok: true } & T) | {
  readonly ok: false;
  readonly error: WebhookTargetError;
};

export function urlRefused(
  reason: WebhookTargetRefusal,
  message: string,
  cause?: unknown,
): { ok: false; error: WebhookTargetError } {
  const options = cause === undefined ? undefined : { cause };
  const error = new WebhookTargetError(
    "WEBHOOK_URL_REFUSED",
    reason,
    `Cannot use webhook URL: ${message}`,
    undefined,
    undefined,
    options,
  );
  return { ok: false, error };
}

export function addressRefused(
  address: string,
  range: string,
  label: string,
): { ok: false; error: WebhookTargetError } {
  const message = `Cannot deliver to ${address}: it is in ${range} (${label}), not public unicast`;
  const error = new WebhookTargetError(
    "WEBHOOK_ADDRESS_REFUSED",
    "address",
    message,
    address,
    range,
  );
  return { ok: false, error };
}

export function mixedAnswerRefusal(
  host: string,
  answerCount: number,
  inner: WebhookTargetError,
): { ok: false; error: WebhookTargetError } {
  if (inner.range === undefined) return { ok: false, error: inner };
  const of = answerCount > 1 ? ` (one of ${answerCount} answers; any private answer refuses)` : "";
  const error = new WebhookTargetError(
    "WEBHOOK_ADDRESS_REFUSED",
    "address",
    `Cannot deliver to ${host}: it resolves to ${inner.address}${of}, in ${inner.range}`,
    inner.address,
    inner.range,
    { cause: inner },
  );
  return { ok: false, error };
}

export function dnsFailed(message: string, cause?: unknown): WebhookTargetError {
  const options = cause === undefined ? undefined : { cause };
  return new WebhookTargetError(
    "WEBHOOK_DNS_FAILED",
    "dns",
    message,
    undefined,
    undefined,
    options,
  );
}
