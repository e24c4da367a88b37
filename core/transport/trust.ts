/**
 * What TLS trusts and presents: a private CA added to Node's roots (or alone, when asked), and a
 * client certificate (PEM certificate and key, or PKCS#12), as settings read and then as the
 * options undici's connector takes. Pure but for Node's TLS parser, which checks a certificate and
 * its key before the first request rather than at the first handshake; the files are read by the
 * caller (`network.ts`).
 *
 * Giving Node a `ca` replaces its whole trust store, `NODE_EXTRA_CA_CERTS` included: to add a CA,
 * the union is passed (the bundled roots, the extra certificates' file, the CA).
 *
 * `S` is how the caller holds a secret (each Effect line its `Redacted`): see {@link Secrets}.
 */
import { X509Certificate } from "node:crypto"
import * as Tls from "node:tls"
import { accept, type Checked, refuse } from "../validate.js"

/** PEM text, or a file's path: a value holding a PEM header is the PEM itself. */
export const isPem = (text: string): boolean => text.includes("-----BEGIN ")

/** How the caller holds secrets: how it reveals one it was given, and seals one read here. */
export interface Secrets<S> {
  readonly reveal: (value: unknown) => unknown
  readonly seal: (text: string) => S
}

/** A client certificate as set: PEM certificate and key (text or paths), or a PKCS#12 bundle (bytes or a path). */
export type ClientCertificate<S> =
  | {
    readonly _tag: "Pem"
    readonly cert: string
    /** The key, or its path: a secret either way (a path tells where it is). */
    readonly key: S
    readonly passphrase: S | undefined
  }
  | {
    readonly _tag: "Pkcs12"
    readonly pfx: Uint8Array | string
    readonly passphrase: S | undefined
  }

/** Text that is not blank, revealed. */
const textOf = (value: unknown, reveal: (value: unknown) => unknown): string | undefined => {
  const revealed = reveal(value)
  return typeof revealed === "string" && revealed.trim() !== "" ? revealed : undefined
}

/**
 * The `clientCertificate` setting read: `{ cert, key, passphrase? }` (PEM text or file paths) or
 * `{ pfx, passphrase? }` (PKCS#12 bytes or a file path). Reasons name the fields by both their
 * option and their variable, and never show a value.
 */
export const clientCertificate = <S>(value: unknown, secrets: Secrets<S>): Checked<ClientCertificate<S>> => {
  const text = (field: unknown) => textOf(field, secrets.reveal)
  const secret = (field: unknown): S | undefined => {
    const found = text(field)
    return found === undefined ? undefined : secrets.seal(found)
  }
  if (typeof value !== "object" || value === null) {
    return refuse("must be { cert, key, passphrase? } or { pfx, passphrase? }")
  }
  const { cert, key, passphrase, pfx } = value as Record<string, unknown>
  if (passphrase !== undefined && secret(passphrase) === undefined) {
    return refuse("has a passphrase (CLINICAL_CLIENT_KEY_PASSPHRASE) that is not text")
  }
  if (pfx !== undefined) {
    if (cert !== undefined || key !== undefined) {
      return refuse("takes a PKCS#12 bundle (pfx, CLINICAL_CLIENT_PFX_FILE) or a PEM cert and key, not both")
    }
    const bundle = pfx instanceof Uint8Array ? pfx : text(pfx)
    return bundle === undefined
      ? refuse("has a pfx (CLINICAL_CLIENT_PFX_FILE) that is neither bytes nor a file path")
      : accept({ _tag: "Pkcs12", pfx: bundle, passphrase: secret(passphrase) })
  }
  const certificate = text(cert)
  const privateKey = secret(key)
  if (certificate === undefined) {
    return refuse("needs cert (CLINICAL_CLIENT_CERT_FILE): the certificate's PEM text or file path")
  }
  if (privateKey === undefined) {
    return refuse("needs key (CLINICAL_CLIENT_KEY_FILE): the private key's PEM text or file path")
  }
  return accept({ _tag: "Pem", cert: certificate, key: privateKey, passphrase: secret(passphrase) })
}

/** Longest PEM text a setting takes, as for a file: a CA bundle is kilobytes. */
export const MAX_PEM_LENGTH = 1024 * 1024

/** The `ca` setting read: PEM text or a file path. */
export const caSetting = (value: unknown, reveal: (value: unknown) => unknown): Checked<string> => {
  const found = textOf(value, reveal)
  if (found !== undefined && found.length > MAX_PEM_LENGTH) return refuse("is longer than 1 MiB")
  return found === undefined
    ? refuse("must be the CA's certificates as PEM text, or the path of a PEM file")
    : accept(found)
}

const BEGIN = "-----BEGIN CERTIFICATE-----"
const END = "-----END CERTIFICATE-----"

/**
 * The certificates of a PEM text, each as its own PEM block. One pass of `indexOf`, in time linear
 * in the text (a lazy regular expression rescanned the rest of the text from every BEGIN without an
 * END: 15 s for a megabyte of them).
 */
export const certificatesOf = (pem: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  let at = pem.indexOf(BEGIN)
  while (at >= 0) {
    const end = pem.indexOf(END, at + BEGIN.length)
    if (end < 0) break
    // A BEGIN inside the block (one cut short) starts the block again there.
    const restart = pem.lastIndexOf(BEGIN, end)
    found.push(pem.slice(restart, end + END.length))
    at = pem.indexOf(BEGIN, end + END.length)
  }
  return found
}

/**
 * Whether a PEM block is a certificate Node can read. Node's TLS takes a `ca` of blocks that are
 * not certificates without a word (and trusts nothing by them): a CA file of junk would otherwise
 * be accepted, and every handshake fail later as "not signed by a CA this client trusts".
 */
const isCertificate = (pem: string): boolean => {
  try {
    new X509Certificate(pem)
    return true
  } catch {
    return false
  }
}

/**
 * The CAs a client trusts, given the `ca` setting's certificates (PEM): with `caOnly`, those alone;
 * else Node's bundled roots, the certificates of `NODE_EXTRA_CA_CERTS` (its file's text, when set)
 * and those.
 */
export const trustedCas = (
  ca: string,
  caOnly: boolean,
  extraCertificates: string | undefined
): Checked<ReadonlyArray<string>> => {
  const given = certificatesOf(ca)
  if (given.length === 0) return refuse("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
  const unreadable = given.findIndex((pem) => !isCertificate(pem))
  if (unreadable >= 0) {
    return refuse(`holds a PEM block that is not a certificate (block ${unreadable + 1} of ${given.length})`)
  }
  return accept(
    caOnly ? given : [...Tls.rootCertificates, ...certificatesOf(extraCertificates ?? ""), ...given]
  )
}

/** The TLS options of undici's connector for a client certificate, its files already read. */
export interface ClientTls {
  readonly cert?: string
  readonly key?: string
  readonly pfx?: Buffer
  readonly passphrase?: string
}

/**
 * The TLS context of the CAs trusted and the client certificate (the key opens with the
 * passphrase, and belongs to the certificate), or what is wrong, without the key or the passphrase.
 */
export const secureContextOf = (
  tls: ClientTls & { readonly ca?: Array<string> }
): Checked<Tls.SecureContext> => {
  try {
    return accept(Tls.createSecureContext(tls))
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause)
    if (/bad decrypt|bad password|mac verify failure|decrypt/i.test(message)) {
      return refuse("its key or bundle does not open with the passphrase given (CLINICAL_CLIENT_KEY_PASSPHRASE)")
    }
    if (/key values mismatch|KEY_VALUES_MISMATCH/i.test(message)) {
      return refuse("its key does not belong to its certificate")
    }
    if (/no start line|PEM|asn1|not enough data|header too long|unsupported/i.test(message)) {
      return refuse("is not a PEM certificate and key, or a PKCS#12 bundle, that Node can read")
    }
    return refuse("could not be used by Node's TLS")
  }
}
