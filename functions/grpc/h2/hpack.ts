// HPACK (RFC 7541) for the lean transport: requests' header blocks are decoded by hpack.js
// (Huffman and the dynamic table); the few responses a gRPC server sends are encoded here
// as literals that never touch the dynamic table, so a block can be built once and reused.
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";

interface Decompressor {
  _decoder: { push(b: Buffer): void; isEmpty(): boolean };
  _execute(): void;
  push(h: { name: string; value: string }): boolean;
}

const require = createRequire(import.meta.url);
const hpack = require("hpack.js") as {
  decompressor: { create(o: { table: { maxSize: number } }): Decompressor };
};

/** One connection's request-header decoder (its dynamic table lives across blocks). */
export class HeaderDecoder {
  #d: Decompressor;
  #out: Map<string, string> | undefined;
  #bytes = 0;

  constructor(tableBytes: number, private readonly listBytesMax: number) {
    // `maxSize` (hpack.js's name): the table evicts beyond it, and a client's dynamic table
    // size update (RFC 7541 §6.3) may go up to it. Without it nothing is ever evicted (the
    // table grew by every request's x-mq-request-id) and any size update was refused.
    this.#d = hpack.decompressor.create({ table: { maxSize: tableBytes } });
    // hpack.js is a stream; its decoder's output is taken here, header by header.
    this.#d.push = (h) => {
      this.#bytes += h.name.length + h.value.length + 32;
      const out = this.#out!;
      const had = out.get(h.name);
      out.set(h.name, had === undefined ? h.value : `${had},${h.value}`);
      return true;
    };
  }

  /** The headers of a complete block; throws on a malformed or oversized block. */
  decode(block: Buffer): Map<string, string> {
    const out = new Map<string, string>();
    this.#out = out;
    this.#bytes = 0;
    this.#d._decoder.push(block);
    while (!this.#d._decoder.isEmpty()) {
      this.#d._execute();
      if (this.#bytes > this.listBytesMax) throw new Error("header list too large");
    }
    this.#out = undefined;
    return out;
  }
}

/** A literal header field without indexing, new name (RFC 7541 §6.2.2). */
function literal(name: string, value: string): Buffer {
  const n = Buffer.from(name), v = Buffer.from(value);
  return Buffer.concat([Buffer.from([0x00]), int7(n.length), n, int7(v.length), v]);
}

/** A string length, 7-bit prefix, no Huffman. */
function int7(n: number): Buffer {
  if (n < 0x7f) return Buffer.from([n]);
  const out = [0x7f];
  n -= 0x7f;
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** `:status: 200` (static table entry 8) and `content-type: application/grpc`. */
export const RESPONSE_HEADERS = Buffer.concat([
  Buffer.from([0x88]),
  literal("content-type", "application/grpc"),
]);

/** Trailers with grpc-status 0. */
export const TRAILERS_OK = literal("grpc-status", "0");

/** Trailers (or a trailers-only response's headers) with a status and message. */
export function statusBlock(code: number, message: string, withHeaders: boolean): Buffer {
  const parts: Uint8Array[] = withHeaders ? [RESPONSE_HEADERS] : [];
  parts.push(literal("grpc-status", String(code)));
  if (message) parts.push(literal("grpc-message", encodeURIComponent(message)));
  return Buffer.concat(parts);
}
