// Base64 for message bodies in JSON, without the zod schemas around them (the broker link
// loads it at start, where zod is not: functions/app.ts, lazy).
/** Uint8Array.fromBase64 (ES2026; Deno 2 and Bun have it), else atob and a copy. */
const B64 = Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array };

/** Bytes of a body already checked to be padded base64. */
export function fromBase64(text: string): Uint8Array {
  if (B64.fromBase64) return B64.fromBase64(text);
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Base64 of `bytes`: Uint8Array.prototype.toBase64 where the runtime has it (Deno 2, Bun),
 * else btoa over 32 KiB slices. */
export function toBase64(bytes: Uint8Array): string {
  const own = (bytes as unknown as { toBase64?: () => string }).toBase64;
  if (own) return own.call(bytes);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}
