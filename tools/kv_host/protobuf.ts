// The protobuf wire format, as much as KV Connect's datapath.proto needs: varints (uint32,
// int64, bool, enum), length-delimited fields (bytes, nested messages, packed repeated
// varints). Wire types 1 and 5 (fixed64, fixed32) are skipped when unknown fields carry them.
// Spec: https://protobuf.dev/programming-guides/encoding/
//
// Readers check every length against the buffer: the input comes off the network.

/** The bytes are not a well-formed protobuf message. */
export class ProtobufError extends Error {
  override name = "ProtobufError";
}

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_FIXED32 = 5;

/** A varint is at most 10 bytes (64 bits, 7 per byte). */
const VARINT_BYTES_MAX = 10;

export class ProtoReader {
  #pos = 0;
  readonly #buf: Uint8Array;
  constructor(message: Uint8Array) {
    this.#buf = message;
  }

  get done(): boolean {
    return this.#pos >= this.#buf.length;
  }

  /** An unsigned varint of up to 64 bits. */
  varintBig(): bigint {
    let value = 0n;
    for (let i = 0; i < VARINT_BYTES_MAX; i++) {
      if (this.#pos >= this.#buf.length) throw new ProtobufError("Varint runs past the end");
      const byte = this.#buf[this.#pos++];
      value |= BigInt(byte & 0x7f) << BigInt(7 * i);
      if ((byte & 0x80) === 0) return BigInt.asUintN(64, value);
    }
    throw new ProtobufError("Varint is longer than 10 bytes");
  }

  /** A varint that must fit a safe integer (uint32, enum, bool, lengths). */
  varint(): number {
    const value = this.varintBig();
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ProtobufError(`Varint ${value} is too large for this field`);
    }
    return Number(value);
  }

  /** An int64 field: two's complement in a 10-byte varint when negative. */
  int64(): bigint {
    return BigInt.asIntN(64, this.varintBig());
  }

  /** A length-delimited field; a view into the input, not a copy. */
  bytes(): Uint8Array {
    const length = this.varint();
    const end = this.#pos + length;
    if (end > this.#buf.length) {
      throw new ProtobufError(
        `Field of ${length} bytes runs past the end (${this.#buf.length - this.#pos} left)`,
      );
    }
    const view = this.#buf.subarray(this.#pos, end);
    this.#pos = end;
    return view;
  }

  skip(wireType: number): void {
    if (wireType === WIRE_VARINT) this.varintBig();
    else if (wireType === WIRE_LEN) this.bytes();
    else if (wireType === WIRE_FIXED64) this.#advance(8);
    else if (wireType === WIRE_FIXED32) this.#advance(4);
    else throw new ProtobufError(`Unsupported wire type ${wireType}`);
  }

  #advance(n: number): void {
    if (this.#pos + n > this.#buf.length) throw new ProtobufError("Fixed field runs past the end");
    this.#pos += n;
  }
}

/** One field of a message being read; its accessors check the wire type. */
export class ProtoField {
  #consumed = false;
  constructor(
    readonly number: number,
    readonly wireType: number,
    private readonly reader: ProtoReader,
  ) {}

  get consumed(): boolean {
    return this.#consumed;
  }

  /** uint32, uint64 that fits a safe integer, or an enum. */
  uint(): number {
    this.#expect(WIRE_VARINT);
    return this.reader.varint();
  }

  int64(): bigint {
    this.#expect(WIRE_VARINT);
    return this.reader.int64();
  }

  bool(): boolean {
    this.#expect(WIRE_VARINT);
    return this.reader.varintBig() !== 0n;
  }

  /** bytes, string or a nested message. */
  bytes(): Uint8Array {
    this.#expect(WIRE_LEN);
    return this.reader.bytes();
  }

  /** One element, or a packed run, of a repeated varint field. */
  uints(out: number[]): void {
    if (this.wireType === WIRE_VARINT) {
      out.push(this.uint());
      return;
    }
    const packed = new ProtoReader(this.bytes());
    while (!packed.done) out.push(packed.varint());
  }

  #expect(wireType: number): void {
    if (this.#consumed) throw new Error("ProtoField read twice");
    if (this.wireType !== wireType) {
      throw new ProtobufError(
        `Field ${this.number} has wire type ${this.wireType}, expected ${wireType}`,
      );
    }
    this.#consumed = true;
  }
}

/**
 * Calls `onField` for each field of `message`, in wire order. A field the callback does
 * not read is skipped, so unknown fields are ignored as protobuf requires.
 */
export function readFields(message: Uint8Array, onField: (field: ProtoField) => void): void {
  const reader = new ProtoReader(message);
  while (!reader.done) {
    const tag = reader.varint();
    const field = new ProtoField(Math.floor(tag / 8), tag & 7, reader);
    if (field.number === 0) throw new ProtobufError("Field number 0 is reserved");
    onField(field);
    if (!field.consumed) reader.skip(field.wireType);
  }
}

export class ProtoWriter {
  #buf = new Uint8Array(256);
  #len = 0;

  varint(value: number | bigint): this {
    let v = BigInt.asUintN(64, BigInt(value));
    this.#reserve(VARINT_BYTES_MAX);
    while (v >= 0x80n) {
      this.#buf[this.#len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.#buf[this.#len++] = Number(v);
    return this;
  }

  tag(field: number, wireType: number): this {
    return this.varint(field * 8 + wireType);
  }

  /** A varint field; proto3 omits the default 0. */
  uint(field: number, value: number | bigint): this {
    return value ? this.tag(field, WIRE_VARINT).varint(value) : this;
  }

  bool(field: number, value: boolean): this {
    return value ? this.uint(field, 1) : this;
  }

  /** A bytes field; proto3 omits the default empty value. */
  bytes(field: number, value: Uint8Array): this {
    return value.length ? this.#lengthDelimited(field, value) : this;
  }

  /** A nested message; written even when empty, since presence can matter. */
  message(field: number, value: ProtoWriter): this {
    return this.#lengthDelimited(field, value.finish());
  }

  packed(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const inner = new ProtoWriter();
    for (const v of values) inner.varint(v);
    return this.#lengthDelimited(field, inner.finish());
  }

  finish(): Uint8Array<ArrayBuffer> {
    return this.#buf.slice(0, this.#len);
  }

  #lengthDelimited(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LEN).varint(value.length);
    this.#reserve(value.length);
    this.#buf.set(value, this.#len);
    this.#len += value.length;
    return this;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const grown = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
    grown.set(this.#buf.subarray(0, this.#len));
    this.#buf = grown;
  }
}
