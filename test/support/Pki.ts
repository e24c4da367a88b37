/**
 * A throwaway public-key infrastructure for the TLS tests, made with `openssl` at run time in a
 * directory only this user can read: a CA and the server's certificate it signs (for `localhost`
 * alone), one already expired, one valid only from tomorrow, a CA of client certificates and a client's certificate (its key
 * plain, encrypted, and as PKCS#12), and a stranger's CA with a client certificate of its own.
 * Elliptic-curve keys: quick to make.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

export interface Pair {
  readonly cert: string
  readonly key: string
  readonly certFile: string
  readonly keyFile: string
}

export interface Pki {
  readonly dir: string
  /** The CA of the servers' certificates. */
  readonly ca: Pair
  /** The server's certificate, for `localhost` (not 127.0.0.1), signed by `ca`. */
  readonly server: Pair
  /** The same, expired yesterday. */
  readonly expired: Pair
  /** The same, valid only from tomorrow. */
  readonly notYetValid: Pair
  /** The CA of client certificates the server takes. */
  readonly clientCa: Pair
  readonly client: Pair
  /** The client's key encrypted with {@link PASSPHRASE}. */
  readonly clientEncryptedKeyFile: string
  /** The client's certificate and key as PKCS#12, under {@link PASSPHRASE}. */
  readonly clientP12File: string
  /** A client certificate of another CA, which the server refuses. */
  readonly stranger: Pair
  readonly remove: () => void
}

export const PASSPHRASE = "k3y-Pa55phrase"

const openssl = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] })

const read = (dir: string, name: string, keyName = name): Pair => ({
  cert: Fs.readFileSync(Path.join(dir, `${name}.pem`), "utf8"),
  key: Fs.readFileSync(Path.join(dir, `${keyName}.key`), "utf8"),
  certFile: Path.join(dir, `${name}.pem`),
  keyFile: Path.join(dir, `${keyName}.key`)
})

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

const selfSigned = (dir: string, name: string, subject: string) =>
  openssl(dir, ["req", "-x509", ...EC, "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "2", "-subj", subject])

const signed = (
  dir: string,
  name: string,
  keyName: string,
  ca: string,
  subject: string,
  extensions: string,
  days: string
) => {
  if (!Fs.existsSync(Path.join(dir, `${keyName}.key`))) {
    openssl(dir, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${keyName}.key`])
  }
  openssl(dir, ["req", "-new", "-key", `${keyName}.key`, "-out", `${name}.csr`, "-subj", subject])
  Fs.writeFileSync(Path.join(dir, `${name}.ext`), extensions)
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.pem`,
    "-days",
    days,
    "-extfile",
    `${name}.ext`
  ])
}

/**
 * A certificate signed by `ca` whose validity starts a day from now: `openssl ca`, since OpenSSL 3.0's
 * `x509 -req` counts days from now only.
 */
const signedFromTomorrow = (dir: string, name: string, keyName: string, ca: string, extensions: string) => {
  openssl(dir, ["req", "-new", "-key", `${keyName}.key`, "-out", `${name}.csr`, "-subj", "/CN=localhost"])
  Fs.writeFileSync(Path.join(dir, `${name}.ext`), extensions)
  Fs.writeFileSync(Path.join(dir, "index.txt"), "")
  Fs.writeFileSync(
    Path.join(dir, `${name}.cnf`),
    [
      "[ca]",
      "default_ca = here",
      "[here]",
      "database = index.txt",
      "new_certs_dir = .",
      "serial = ca.srl",
      "default_md = sha256",
      "policy = any",
      "unique_subject = no",
      "[any]",
      "commonName = supplied"
    ].join("\n")
  )
  const at = (daysFromNow: number) =>
    new Date(Date.now() + daysFromNow * 86_400_000).toISOString().replace(/[-:T]/g, "").replace(/\.\d+Z$/, "Z")
  openssl(dir, [
    "ca",
    "-batch",
    "-notext",
    "-config",
    `${name}.cnf`,
    "-cert",
    `${ca}.pem`,
    "-keyfile",
    `${ca}.key`,
    "-in",
    `${name}.csr`,
    "-out",
    `${name}.pem`,
    "-startdate",
    at(1),
    "-enddate",
    at(2),
    "-extfile",
    `${name}.ext`
  ])
}

/** Makes every certificate of {@link Pki} (about a second). */
export const make = (): Pki => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-clinical-pki-"))
  Fs.chmodSync(dir, 0o700)
  const serverExt = "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n"
  const clientExt = "extendedKeyUsage=clientAuth\n"
  selfSigned(dir, "ca", "/CN=effect-clinical test CA")
  signed(dir, "server", "server", "ca", "/CN=localhost", serverExt, "2")
  signed(dir, "expired", "server", "ca", "/CN=localhost", serverExt, "-1")
  signedFromTomorrow(dir, "not-yet-valid", "server", "ca", serverExt)
  selfSigned(dir, "client-ca", "/CN=effect-clinical test client CA")
  signed(dir, "client", "client", "client-ca", "/CN=effect-clinical test client", clientExt, "2")
  selfSigned(dir, "stranger-ca", "/CN=a stranger's CA")
  signed(dir, "stranger", "stranger", "stranger-ca", "/CN=a stranger", clientExt, "2")
  openssl(dir, [
    "pkey",
    "-in",
    "client.key",
    "-aes256",
    "-passout",
    `pass:${PASSPHRASE}`,
    "-out",
    "client-encrypted.key"
  ])
  openssl(dir, [
    "pkcs12",
    "-export",
    "-inkey",
    "client.key",
    "-in",
    "client.pem",
    "-out",
    "client.p12",
    "-passout",
    `pass:${PASSPHRASE}`
  ])
  return {
    dir,
    ca: read(dir, "ca"),
    server: read(dir, "server"),
    expired: read(dir, "expired", "server"),
    notYetValid: read(dir, "not-yet-valid", "server"),
    clientCa: read(dir, "client-ca"),
    client: read(dir, "client"),
    clientEncryptedKeyFile: Path.join(dir, "client-encrypted.key"),
    clientP12File: Path.join(dir, "client.p12"),
    stranger: read(dir, "stranger"),
    remove: () => Fs.rmSync(dir, { recursive: true, force: true })
  }
}
