// One POST of the webhook client: its deadline, abort signal, what its response said so
// far and how it settles; the pool and connection carrying it are seen through the
// interfaces below (implemented by h1_pool.ts and h1_connection.ts).
import {
  concat,
  type KeptHeaderName,
  type PinnedPostRequest,
  type PostOutcome,
  type PreparedTarget,
  WebhookDeliveryError,
  type WebhookDeliveryErrorCode,
} from "./http_delivery.ts";
import type { Settings } from "./h1_settings.ts";
import type { VettedAddress } from "./ssrf.ts";

/** What an attempt reads of its pool (h1_pool.ts's Pool). */
export interface AttemptPool {
  readonly settings: Settings;
  readonly target: PreparedTarget;
  readonly address: VettedAddress;
}

/** What an attempt asks of the connection carrying it (h1_connection.ts's Connection). */
export interface AttemptConnection {
  abandon(attempt: Attempt): void;
}

/** One POST: its bytes, deadline, abort signal and what its response said so far. */
export class Attempt {
  settled = false;
  #connection: AttemptConnection | undefined;
  #reused = false;
  #status = 0;
  #headers: Partial<Record<KeptHeaderName, string>> = {};
  #pieces: Uint8Array[] = [];
  #kept = 0;
  #read = 0;
  #framing = 0;
  #repeated = false;
  readonly #timer: ReturnType<typeof setTimeout>;

  constructor(
    readonly pool: AttemptPool,
    readonly bytes: Uint8Array,
    readonly input: PinnedPostRequest,
    readonly startMs: number,
    readonly resolve: (outcome: PostOutcome) => void,
  ) {
    const totalMs = input.totalTimeoutMs ?? pool.settings.totalTimeoutMs;
    this.#timer = setTimeout(
      () => this.fail("timeout", `No complete response within ${totalMs} ms`),
      totalMs,
    );
    input.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  begin(connection: AttemptConnection, reused: boolean): void {
    this.#connection = connection;
    this.#reused = reused;
  }

  /** True the first time only: an attempt is repeated at most once (stale connection). */
  mayRepeat(): boolean {
    if (this.settled || this.#repeated) return false;
    this.#repeated = true;
    this.#connection = undefined;
    return true;
  }

  response(status: number, headers: Partial<Record<KeptHeaderName, string>>): void {
    this.#status = status;
    this.#headers = headers;
  }

  /** Body bytes; false once past responseBytesMax (the caller drops the connection). */
  data(chunk: Uint8Array): boolean {
    const s = this.pool.settings;
    if (this.#kept < s.bodyPrefixBytes) {
      // A copy, as a plain Uint8Array (Buffer#slice would be a view).
      const take = new Uint8Array(Math.min(chunk.length, s.bodyPrefixBytes - this.#kept));
      take.set(chunk.subarray(0, take.length));
      this.#pieces.push(take);
      this.#kept += take.length;
    }
    this.#read += chunk.length;
    return this.#read <= s.responseBytesMax;
  }

  /** Chunk lines and trailers: not body, but they count against responseBytesMax too, so
   * framing cannot stretch a response past it. False once past. */
  framing(bytes: number): boolean {
    this.#framing += bytes;
    return this.#read + this.#framing <= this.pool.settings.responseBytesMax;
  }

  done(fullyRead: boolean): void {
    this.#settle({
      ok: true,
      status: this.#status,
      headers: this.#headers,
      bodyPrefix: this.#pieces.length === 1 ? this.#pieces[0] : concat(this.#pieces, this.#kept),
      bodyBytesRead: this.#read,
      bodyFullyRead: fullyRead,
      connectionReused: this.#reused,
      latencyMs: this.pool.settings.nowMs() - this.startMs,
    });
  }

  readonly #onAbort = () => this.fail("aborted", "Aborted by the caller");

  fail(code: WebhookDeliveryErrorCode, reason: string, cause?: unknown): void {
    if (this.settled) return;
    const error = new WebhookDeliveryError(
      code,
      `Cannot POST to ${this.#origin()}: ${reason}`,
      cause === undefined ? {} : { cause },
    );
    this.#settle({ ok: false, error, latencyMs: this.pool.settings.nowMs() - this.startMs });
    this.#connection?.abandon(this);
  }

  #origin(): string {
    const { address, family } = this.pool.address;
    const shown = family === 6 ? `[${address}]` : address;
    return `${this.pool.target.url.protocol}//${this.pool.target.url.host} via ${shown}`;
  }

  #settle(outcome: PostOutcome): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.#timer);
    this.input.signal?.removeEventListener("abort", this.#onAbort);
    this.resolve(outcome);
  }
}
