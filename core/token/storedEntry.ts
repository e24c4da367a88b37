/**
 * A token as a shared store holds it, for either Effect line: one string, JSON, sealed with
 * AES-256-GCM when the application gives a key. The token is a secret at rest: whoever can read
 * the store but not the key learns nothing, and cannot plant a token of their own (the seal
 * authenticates it, bound to the key name it was written under). Reading never throws: a value
 * that does not read is an {@link Unreadable}. `S` is the line's `Redacted`: a token read is sealed
 * with the line's `seal` at once, and revealed with its `reveal` only to be written.
 */
import * as Crypto from "node:crypto"
import { accept, type Checked, MAX_TOKEN_LENGTH, refuse, visibleAscii } from "../validate.js"

/** What is stored of a token, besides its generation and its time left (the store keeps those). */
export interface Entry<S> {
  readonly token: S
  /** The lifetime used (after the cap), in ms: with the time left, it places the refresh windows. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave, in ms. */
  readonly serverLifetimeMillis: number
  /** The token server's clock minus the publisher's, in ms; `undefined` when it sent no `Date`. */
  readonly serverClockSkewMillis: number | undefined
}

/**
 * Which token it is, without holding it: the first 128 bits of a SHA-256 of the token. Tokens are
 * compared by it (adopting, dropping a refused one), never by generation alone: after the store
 * restarts empty, generations start again and two tokens can share a number.
 */
export const fingerprintOf = (token: string): string =>
  Crypto.createHash("sha256").update(`effect-clinical token\n${token}`).digest("hex").slice(0, 32)

/** Longest stored value read: a token is at most 4,096 characters, so a real entry is far shorter. */
export const MAX_STORED_LENGTH = 16 * 1024

/** Fewest different byte values a sealing key's 32 bytes may hold (random keys have 30 or so). */
export const MIN_DISTINCT_BYTES = 16

const SEALED = "sealed:v1:"
const IV_BYTES = 12
const TAG_BYTES = 16

/**
 * A sealing key's 32 bytes from what an application holds, already revealed: 32 bytes, or their
 * base64 (44 characters) or hex (64 characters), random enough: a key of one byte repeated, or of a
 * few, is refused. The reason never shows the value.
 */
export const sealingKeyBytes = (raw: unknown): Checked<Uint8Array> => {
  let bytes: Uint8Array | undefined
  if (raw instanceof Uint8Array) bytes = raw
  else if (typeof raw === "string") {
    const text = raw.trim()
    if (/^[0-9a-fA-F]{64}$/.test(text)) bytes = Buffer.from(text, "hex")
    else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) bytes = Buffer.from(text, "base64")
  }
  if (bytes === undefined || bytes.length !== 32) {
    return refuse("must be 32 bytes: a Uint8Array, or their base64 (44 characters) or hex (64 characters)")
  }
  // 32 random bytes hold about 30 different values; fewer than 16 is a key typed or made by hand.
  if (new Set(bytes).size < MIN_DISTINCT_BYTES) {
    return refuse(
      `is too weak (fewer than ${MIN_DISTINCT_BYTES} different bytes among its 32): make one with \`openssl rand -base64 32\``
    )
  }
  return accept(Uint8Array.from(bytes))
}

/**
 * A key of its own for one purpose, derived from a sealing key's bytes (HKDF-SHA256, the purpose as
 * its info): one key the application holds serves several uses, and the same bytes never serve two.
 */
export const derivedKeyBytes = (key: Uint8Array, purpose: string): Uint8Array =>
  new Uint8Array(Crypto.hkdfSync("sha256", key, new Uint8Array(0), purpose, 32))

// Number.isFinite is true of finite numbers alone: no typeof check is needed before it.
const isMillis = (value: unknown): value is number =>
  Number.isFinite(value) && (value as number) > 0 && (value as number) <= Number.MAX_SAFE_INTEGER

/**
 * The entry as one string: its fingerprint, `|`, then the entry as JSON, or sealed under `key`
 * and bound to `name` (the key name it is written under). The fingerprint is in the clear so that
 * a store can drop a refused token without reading it.
 */
export const encode = <S>(
  entry: Entry<S>,
  reveal: (token: S) => string,
  key: Uint8Array | undefined,
  name: string
): string => {
  const token = reveal(entry.token)
  return `${fingerprintOf(token)}|${encodeBody(token, entry, key, name)}`
}

const encodeBody = <S>(token: string, entry: Entry<S>, key: Uint8Array | undefined, name: string): string => {
  const json = JSON.stringify({
    token,
    lifetimeMillis: entry.lifetimeMillis,
    serverLifetimeMillis: entry.serverLifetimeMillis,
    serverClockSkewMillis: entry.serverClockSkewMillis ?? null
  })
  if (key === undefined) return json
  const iv = Crypto.randomBytes(IV_BYTES)
  const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv)
  // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
  cipher.setAAD(Buffer.from(name, "utf8"))
  // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
  const sealed = Buffer.concat([iv, cipher.update(json, "utf8"), cipher.final(), cipher.getAuthTag()])
  return `${SEALED}${sealed.toString("base64")}`
}

/**
 * Why a stored value cannot be read (written to be shown, never the value), and whether it may be
 * a token another instance sealed with another key (or one tampered with: a seal cannot tell),
 * rather than a value no instance wrote.
 */
export class Unreadable {
  constructor(readonly reason: string, readonly sealedOtherwise: boolean) {}
}

const damaged = (reason: string): Unreadable => new Unreadable(reason, false)

const sealedOtherwise = (reason: string): Unreadable => new Unreadable(reason, true)

const open = (text: string, key: Uint8Array, name: string): string | Unreadable => {
  if (!text.startsWith(SEALED)) return damaged("the stored token is not sealed, and this instance seals")
  const sealed = Buffer.from(text.slice(SEALED.length), "base64")
  if (sealed.length <= IV_BYTES + TAG_BYTES) return damaged("the stored token's seal is cut short")
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", key, sealed.subarray(0, IV_BYTES))
    // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
    decipher.setAAD(Buffer.from(name, "utf8"))
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
    const body = sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8")
  } catch {
    return sealedOtherwise("the stored token's seal does not open with this key (another sealing key, or tampered)")
  }
}

/** An entry read from a store, and its fingerprint. */
export interface Decoded<S> {
  readonly entry: Entry<S>
  readonly fingerprint: string
}

/** An entry and its fingerprint from the stored string, or why it cannot be read (never the value itself). */
export const decode = <S>(
  text: string,
  seal: (token: string) => S,
  key: Uint8Array | undefined,
  name: string
): Decoded<S> | Unreadable => {
  if (text.length > MAX_STORED_LENGTH) return damaged("the stored token is longer than any token")
  const bar = text.indexOf("|")
  const print = text.slice(0, bar)
  // Stryker disable next-line Regex: equivalent, the print is 32 characters when the bar is at 32, anchored or not
  if (bar !== 32 || !/^[0-9a-f]{32}$/.test(print)) return damaged("the stored token has no fingerprint")
  const body = text.slice(bar + 1)
  if (key === undefined && body.startsWith(SEALED)) {
    return sealedOtherwise("the stored token is sealed, and this instance has no sealing key")
  }
  const json = key === undefined ? body : open(body, key, name)
  if (json instanceof Unreadable) return json
  const entry = entryOf(json)
  if (!entry.ok) return damaged(entry.reason)
  // The fingerprint stands in the clear: it must be the entry's own.
  return fingerprintOf(entry.value.token) === print
    ? { entry: { ...entry.value, token: seal(entry.value.token) }, fingerprint: print }
    : damaged("the stored token's fingerprint is not its own")
}

/** The entry a stored JSON text holds (its token still plain, to be sealed at once), or why it holds none. */
const entryOf = (json: string): Checked<Entry<string>> => {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return refuse("the stored token is not JSON")
  }
  if (typeof value !== "object" || value === null) return refuse("the stored token is not a JSON object")
  const { lifetimeMillis, serverClockSkewMillis, serverLifetimeMillis, token } = value as Record<string, unknown>
  // A token goes into a header: whoever wrote the store must not be able to inject one.
  if (!visibleAscii(token, MAX_TOKEN_LENGTH).ok) return refuse("the stored token is not header-safe")
  if (!isMillis(lifetimeMillis) || !isMillis(serverLifetimeMillis)) {
    return refuse("the stored token's lifetime is not a positive number")
  }
  const skew = serverClockSkewMillis === null || serverClockSkewMillis === undefined
    ? undefined
    : Number.isFinite(serverClockSkewMillis)
    ? serverClockSkewMillis as number
    : null
  if (skew === null) return refuse("the stored token's clock skew is not a number")
  return accept({ token: token as string, lifetimeMillis, serverLifetimeMillis, serverClockSkewMillis: skew })
}
