/**
 * A token as a shared store holds it: one string, JSON, sealed with AES-256-GCM when the
 * application gives a key. The token is a secret at rest: whoever can read the store but not the
 * key learns nothing, and cannot plant a token of their own (the seal authenticates it, bound to
 * the key name it was written under). Reading never throws: a value that does not read is a reason.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Crypto from "node:crypto"
import { MAX_TOKEN_LENGTH, reveal, visibleAscii } from "../validate.js"

/** What is stored of a token, besides its generation and its time left (the store keeps those). */
export interface Entry {
  readonly token: Redacted.Redacted<string>
  /** The lifetime used (after the cap), in ms: with the time left, it places the refresh windows. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave, in ms. */
  readonly serverLifetimeMillis: number
  /** The token server's clock minus the publisher's, in ms; `undefined` when it sent no `Date`. */
  readonly serverClockSkewMillis: number | undefined
}

/**
 * Which token an entry holds, without holding it: the first 128 bits of a SHA-256 of the token.
 * Tokens are compared by it (adopting, dropping a refused one), never by generation alone: after
 * the store restarts empty, generations start again and two tokens can share a number.
 */
export const fingerprint = (token: Redacted.Redacted<string>): string =>
  Crypto.createHash("sha256").update(`effect-clinical token\n${Redacted.value(token)}`).digest("hex").slice(0, 32)

/** Longest stored value read: a token is at most 4,096 characters, so a real entry is far shorter. */
export const MAX_STORED_LENGTH = 16 * 1024

/** A 32-byte AES-256-GCM key. */
export type SealingKey = Redacted.Redacted<Uint8Array>

const SEALED = "sealed:v1:"
const IV_BYTES = 12
const TAG_BYTES = 16

/**
 * A sealing key from what an application holds: 32 bytes, or their base64 (44 characters) or hex
 * (64 characters), plain or `Redacted`, random enough: a key of one byte repeated, or of a few, is
 * refused. The reason never shows the value.
 */
export const sealingKey = (value: unknown): Either.Either<SealingKey, string> => {
  const raw = reveal(value)
  let bytes: Uint8Array | undefined
  if (raw instanceof Uint8Array) bytes = raw
  else if (typeof raw === "string") {
    const text = raw.trim()
    if (/^[0-9a-fA-F]{64}$/.test(text)) bytes = Buffer.from(text, "hex")
    else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) bytes = Buffer.from(text, "base64")
  }
  if (bytes === undefined || bytes.length !== 32) {
    return Either.left("must be 32 bytes: a Uint8Array, or their base64 (44 characters) or hex (64 characters)")
  }
  // 32 random bytes hold about 30 different values; fewer than 16 is a key typed or made by hand.
  if (new Set(bytes).size < MIN_DISTINCT_BYTES) {
    return Either.left(
      `is too weak (fewer than ${MIN_DISTINCT_BYTES} different bytes among its 32): make one with \`openssl rand -base64 32\``
    )
  }
  return Either.right(Redacted.make(Uint8Array.from(bytes)))
}

/**
 * A key of its own for one purpose, derived from a sealing key (HKDF-SHA256, the purpose as its
 * info): one key the application holds serves several uses, and the same bytes never serve two.
 */
export const derivedKey = (key: SealingKey, purpose: string): SealingKey =>
  Redacted.make(new Uint8Array(Crypto.hkdfSync("sha256", Redacted.value(key), new Uint8Array(0), purpose, 32)))

/** Fewest different byte values a sealing key's 32 bytes may hold (random keys have 30 or so). */
export const MIN_DISTINCT_BYTES = 16

// Number.isFinite is true of finite numbers alone: no typeof check is needed before it.
const isMillis = (value: unknown): value is number =>
  Number.isFinite(value) && (value as number) > 0 && (value as number) <= Number.MAX_SAFE_INTEGER

/**
 * The entry as one string: its fingerprint, `|`, then the entry as JSON, or sealed under `key`
 * and bound to `name` (the key name it is written under). The fingerprint is in the clear so that
 * a store can drop a refused token without reading it.
 */
export const encode = (entry: Entry, key: SealingKey | undefined, name: string): string =>
  `${fingerprint(entry.token)}|${encodeBody(entry, key, name)}`

const encodeBody = (entry: Entry, key: SealingKey | undefined, name: string): string => {
  const json = JSON.stringify({
    token: Redacted.value(entry.token),
    lifetimeMillis: entry.lifetimeMillis,
    serverLifetimeMillis: entry.serverLifetimeMillis,
    serverClockSkewMillis: entry.serverClockSkewMillis ?? null
  })
  if (key === undefined) return json
  const iv = Crypto.randomBytes(IV_BYTES)
  const cipher = Crypto.createCipheriv("aes-256-gcm", Redacted.value(key), iv)
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
export interface Unreadable {
  readonly reason: string
  readonly sealedOtherwise: boolean
}

const damaged = (reason: string): Unreadable => ({ reason, sealedOtherwise: false })

const sealedOtherwise = (reason: string): Unreadable => ({ reason, sealedOtherwise: true })

const open = (text: string, key: SealingKey, name: string): Either.Either<string, Unreadable> => {
  if (!text.startsWith(SEALED)) return Either.left(damaged("the stored token is not sealed, and this instance seals"))
  const sealed = Buffer.from(text.slice(SEALED.length), "base64")
  if (sealed.length <= IV_BYTES + TAG_BYTES) return Either.left(damaged("the stored token's seal is cut short"))
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", Redacted.value(key), sealed.subarray(0, IV_BYTES))
    // Stryker disable next-line StringLiteral: equivalent, Node reads an empty encoding as UTF-8
    decipher.setAAD(Buffer.from(name, "utf8"))
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
    const body = sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)
    return Either.right(Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8"))
  } catch {
    return Either.left(
      sealedOtherwise("the stored token's seal does not open with this key (another sealing key, or tampered)")
    )
  }
}

/** An entry and its fingerprint from the stored string, or why it cannot be read (never the value itself). */
export const decode = (
  text: string,
  key: SealingKey | undefined,
  name: string
): Either.Either<{ readonly entry: Entry; readonly fingerprint: string }, Unreadable> => {
  if (text.length > MAX_STORED_LENGTH) return Either.left(damaged("the stored token is longer than any token"))
  const bar = text.indexOf("|")
  const print = text.slice(0, bar)
  // Stryker disable next-line Regex: equivalent, the print is 32 characters when the bar is at 32, anchored or not
  if (bar !== 32 || !/^[0-9a-f]{32}$/.test(print)) return Either.left(damaged("the stored token has no fingerprint"))
  const entry = decodeBody(text.slice(bar + 1), key, name)
  if (Either.isLeft(entry)) return Either.left(entry.left)
  // The fingerprint stands in the clear: it must be the entry's own.
  return fingerprint(entry.right.token) === print
    ? Either.right({ entry: entry.right, fingerprint: print })
    : Either.left(damaged("the stored token's fingerprint is not its own"))
}

const decodeBody = (text: string, key: SealingKey | undefined, name: string): Either.Either<Entry, Unreadable> => {
  if (key === undefined && text.startsWith(SEALED)) {
    return Either.left(sealedOtherwise("the stored token is sealed, and this instance has no sealing key"))
  }
  const json = key === undefined ? Either.right(text) : open(text, key, name)
  return Either.flatMap(json, (opened) => Either.mapLeft(entryOf(opened), damaged))
}

/** The entry a stored JSON text holds, or why it holds none. */
const entryOf = (json: string): Either.Either<Entry, string> => {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return Either.left("the stored token is not JSON")
  }
  if (typeof value !== "object" || value === null) return Either.left("the stored token is not a JSON object")
  const { lifetimeMillis, serverClockSkewMillis, serverLifetimeMillis, token } = value as Record<string, unknown>
  // A token goes into a header: whoever wrote the store must not be able to inject one.
  if (Either.isLeft(visibleAscii(token, MAX_TOKEN_LENGTH))) return Either.left("the stored token is not header-safe")
  if (!isMillis(lifetimeMillis) || !isMillis(serverLifetimeMillis)) {
    return Either.left("the stored token's lifetime is not a positive number")
  }
  const skew = serverClockSkewMillis === null || serverClockSkewMillis === undefined
    ? undefined
    : Number.isFinite(serverClockSkewMillis)
    ? serverClockSkewMillis as number
    : null
  if (skew === null) return Either.left("the stored token's clock skew is not a number")
  return Either.right({
    token: Redacted.make(token as string),
    lifetimeMillis,
    serverLifetimeMillis,
    serverClockSkewMillis: skew
  })
}
