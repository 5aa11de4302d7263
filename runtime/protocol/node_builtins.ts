// Node built-ins that most processes never call, loaded on first use. On Bun importing
// node:crypto, node:net or node:tls runs their JavaScript at once (~3 MiB of RSS each in a
// bare script); off the broker's start path they cost its idle RSS ~0.8 MiB less on Bun
// (bench/README.md, "Round 6 … idle RSS"). Deno loads them lazily either way.
// Webhook egress and signing, QStash, remoting auth and inflate, the consistent-hash
// allocation, the platform's TCP listeners and connection guard reach them through here.
import process from "node:process";
import type * as NodeBuffer from "node:buffer";
import type * as NodeCrypto from "node:crypto";
import type * as NodeNet from "node:net";
import type * as NodeTls from "node:tls";
import type * as NodeDns from "node:dns/promises";
import type * as NodeZlib from "node:zlib";

let crypto: typeof NodeCrypto | undefined;
let net: typeof NodeNet | undefined;
let tls: typeof NodeTls | undefined;
let dns: typeof NodeDns | undefined;
let zlib: typeof NodeZlib | undefined;

export const nodeCrypto = (): typeof NodeCrypto =>
  crypto ??= process.getBuiltinModule("node:crypto") as typeof NodeCrypto;
export const nodeNet = (): typeof NodeNet =>
  net ??= process.getBuiltinModule("node:net") as typeof NodeNet;
export const nodeTls = (): typeof NodeTls =>
  tls ??= process.getBuiltinModule("node:tls") as typeof NodeTls;
export const nodeDns = (): typeof NodeDns =>
  dns ??= process.getBuiltinModule("node:dns/promises") as typeof NodeDns;
export const nodeZlib = (): typeof NodeZlib =>
  zlib ??= process.getBuiltinModule("node:zlib") as typeof NodeZlib;

/** `bytes` random bytes from Web Crypto (no Node module needed), as a Buffer for its encodings. */
export function randomBytes(bytes: number): NodeBuffer.Buffer {
  const { Buffer } = process.getBuiltinModule("node:buffer") as typeof NodeBuffer;
  return Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)));
}
