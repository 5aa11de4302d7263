// Too many pings (gRPC's keepalive enforcement, as gRPC's C core and Java servers do): a
// PING that comes sooner than `intervalMinMs` after the last one, with nothing sent by us
// (HEADERS or DATA) in between, is a strike; past `strikesMax` strikes the connection ends
// with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", which grpc-js and grpc-java clients
// answer by doubling their keepalive time. Pings alongside replies (grpc-go's flow-control
// probes) never strike; RocketMQ's Java client pings every 300 s.
export class PingPolicy {
  #last = -Infinity;
  #strikes = 0;

  constructor(private readonly intervalMinMs: number, private readonly strikesMax: number) {}

  /** A PING came: whether it is one too many. */
  received(nowMs: number): boolean {
    if (nowMs - this.#last < this.intervalMinMs) this.#strikes++;
    this.#last = nowMs;
    return this.#strikes > this.strikesMax;
  }

  /** We sent HEADERS or DATA: pings so far are forgiven. */
  sent() {
    this.#strikes = 0;
    this.#last = -Infinity;
  }
}
