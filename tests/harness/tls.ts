// A throwaway certificate authority and a server certificate for 127.0.0.1 (an IP SAN),
// made with the system's openssl in a temp folder, for tests of the HTTPS broker link.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";

export const OPENSSL = "/usr/bin/openssl";

export interface TestPki extends Disposable {
  dir: string;
  /** The CA's certificate (what the functions trust). */
  caFile: string;
  /** The server certificate for 127.0.0.1 (signed by the CA) and its key. */
  certFile: string;
  keyFile: string;
}

/** Why the TLS tests cannot run here, or undefined when they can. */
export function pkiUnavailable(): string | undefined {
  return existsSync(OPENSSL)
    ? undefined
    : `${OPENSSL} is missing (Debian: apt-get install openssl)`;
}

export function makeTestPki(): TestPki {
  const dir = mkdtempSync(`${tmpdir()}/mq-tls-`);
  const p = (name: string) => `${dir}/${name}`;
  const run = (...args: string[]) => execFileSync(OPENSSL, args, { stdio: "pipe" });
  // EC P-256 keys: made in a few ms, where RSA keys take a noticeable share of a second.
  const key = (file: string) =>
    run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", p(file));
  key("ca.key");
  run(
    "req",
    "-x509",
    "-new",
    "-key",
    p("ca.key"),
    "-sha256",
    "-days",
    "2",
    "-subj",
    "/CN=edgemq test CA",
    "-out",
    p("ca.pem"),
  );
  key("server.key");
  run("req", "-new", "-key", p("server.key"), "-subj", "/CN=127.0.0.1", "-out", p("server.csr"));
  writeFileSync(
    p("server.ext"),
    "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
  );
  run(
    "x509",
    "-req",
    "-in",
    p("server.csr"),
    "-CA",
    p("ca.pem"),
    "-CAkey",
    p("ca.key"),
    "-CAcreateserial",
    "-days",
    "2",
    "-sha256",
    "-extfile",
    p("server.ext"),
    "-out",
    p("server.pem"),
  );
  return {
    dir,
    caFile: p("ca.pem"),
    certFile: p("server.pem"),
    keyFile: p("server.key"),
    [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }),
  };
}
