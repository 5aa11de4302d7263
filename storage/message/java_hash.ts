// Java's String.hashCode, as RocketMQ hashes tags (tagsCode), index keys and sharding keys:
// h = 31·h + UTF-16 code unit, in 32-bit two's complement. Apart from record.ts so code
// that only hashes (the cluster router in the functions) loads nothing else of the record.

export function javaStringHashCode(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  return h;
}
