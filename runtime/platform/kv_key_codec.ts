// KV keys as bytes, packed the way Deno KV packs them (denokv's key codec, FoundationDB's
// tuple layer): byte order of the packed keys is Deno KV's key order, and the packed key of
// a prefix is a byte prefix of the packed keys under it. The etcd backend (etcd_port.ts)
// stores keys this way, so list-by-prefix is one etcd range and ordering matches Deno KV.
//
//   Uint8Array 0x01 bytes 0x00 · string 0x02 UTF-8 0x00 (a 0x00 inside is 0x00 0xFF)
//   bigint 0x0c..0x1c (0x14 is zero; 0x14 ± n then n big-endian bytes, negatives in
//   ones' complement; 0x0b / 0x1d then a length byte beyond 8 bytes)
//   number 0x21 then 8 bytes IEEE 754, big-endian, sign bit flipped (all bits when negative)
//   false 0x26 · true 0x27
import type { KvKey, KvKeyPart } from "./kv_port.ts";

const BYTES = 0x01;
const STRING = 0x02;
const NEG_INT_START = 0x0b;
const INT_ZERO = 0x14;
const POS_INT_END = 0x1d;
const DOUBLE = 0x21;
const FALSE = 0x26;
const TRUE = 0x27;

/** A packed key that is not ours (written by another program). */
export class KvKeyCodecError extends Error {
  override name = "KvKeyCodecError";
}

export function packKey(key: KvKey): Uint8Array {
  const out: number[] = [];
  for (const part of key) packPart(part, out);
  return new Uint8Array(out);
}

function packPart(part: KvKeyPart, out: number[]): void {
  if (part instanceof Uint8Array) return escaped(BYTES, part, out);
  switch (typeof part) {
    case "string":
      return escaped(STRING, new TextEncoder().encode(part), out);
    case "bigint":
      return packBigint(part, out);
    case "number": {
      const bytes = new Uint8Array(8);
      new DataView(bytes.buffer).setFloat64(0, part);
      if (bytes[0] & 0x80) { for (let i = 0; i < 8; i++) bytes[i] ^= 0xff; }
      else bytes[0] ^= 0x80;
      out.push(DOUBLE, ...bytes);
      return;
    }
    case "boolean":
      out.push(part ? TRUE : FALSE);
      return;
  }
  throw new KvKeyCodecError(`Cannot pack a key part of type ${typeof part}`);
}

function escaped(tag: number, bytes: Uint8Array, out: number[]): void {
  out.push(tag);
  for (const b of bytes) {
    out.push(b);
    if (b === 0) out.push(0xff);
  }
  out.push(0);
}

function packBigint(n: bigint, out: number[]): void {
  if (n === 0n) return void out.push(INT_ZERO);
  const magnitude = n < 0n ? -n : n;
  const bytes: number[] = [];
  for (let m = magnitude; m > 0n; m >>= 8n) bytes.unshift(Number(m & 0xffn));
  if (n < 0n) { for (let i = 0; i < bytes.length; i++) bytes[i] ^= 0xff; }
  if (bytes.length <= 8) out.push(n < 0n ? INT_ZERO - bytes.length : INT_ZERO + bytes.length);
  else if (n > 0n) out.push(POS_INT_END, bytes.length);
  else out.push(NEG_INT_START, bytes.length ^ 0xff);
  out.push(...bytes);
}

export function unpackKey(packed: Uint8Array): KvKeyPart[] {
  const parts: KvKeyPart[] = [];
  let i = 0;
  const need = (n: number) => {
    if (i + n > packed.length) throw new KvKeyCodecError("Cannot unpack a key: it ends early");
  };
  while (i < packed.length) {
    const tag = packed[i++];
    if (tag === BYTES || tag === STRING) {
      const bytes: number[] = [];
      for (;;) {
        need(1);
        const b = packed[i++];
        if (b !== 0) bytes.push(b);
        else if (packed[i] === 0xff) (bytes.push(0), i++);
        else break;
      }
      const raw = new Uint8Array(bytes);
      parts.push(tag === BYTES ? raw : new TextDecoder("utf-8", { fatal: true }).decode(raw));
    } else if (tag >= NEG_INT_START && tag <= POS_INT_END) {
      let len = tag - INT_ZERO;
      if (tag === POS_INT_END) (need(1), len = packed[i++]);
      if (tag === NEG_INT_START) (need(1), len = -(packed[i++] ^ 0xff));
      const negative = len < 0;
      need(Math.abs(len));
      let m = 0n;
      for (let k = 0; k < Math.abs(len); k++) {
        m = (m << 8n) | BigInt(negative ? packed[i++] ^ 0xff : packed[i++]);
      }
      parts.push(negative ? -m : m);
    } else if (tag === DOUBLE) {
      need(8);
      const bytes = packed.slice(i, i + 8);
      i += 8;
      if (bytes[0] & 0x80) bytes[0] ^= 0x80;
      else for (let k = 0; k < 8; k++) bytes[k] ^= 0xff;
      parts.push(new DataView(bytes.buffer).getFloat64(0));
    } else if (tag === FALSE || tag === TRUE) {
      parts.push(tag === TRUE);
    } else {
      throw new KvKeyCodecError(`Cannot unpack a key: unknown type byte 0x${tag.toString(16)}`);
    }
  }
  return parts;
}
