/**
 * A token as a shared store holds it (the core's rules: core/token/storedEntry.ts), with this
 * line's `Redacted` and `Either`: one string, JSON, sealed with AES-256-GCM when the application
 * gives a key. Reading never throws: a value that does not read is a reason.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/token/storedEntry.js"
import { reveal } from "../validate.js"

/** What is stored of a token, besides its generation and its time left (the store keeps those). */
export type Entry = Core.Entry<Redacted.Redacted<string>>

/**
 * Which token an entry holds, without holding it: the first 128 bits of a SHA-256 of the token.
 * Tokens are compared by it, never by generation alone (see the core's `fingerprintOf`).
 */
export const fingerprint = (token: Redacted.Redacted<string>): string => Core.fingerprintOf(Redacted.value(token))

/** Longest stored value read: a token is at most 4,096 characters, so a real entry is far shorter. */
export const MAX_STORED_LENGTH = Core.MAX_STORED_LENGTH

/** A 32-byte AES-256-GCM key. */
export type SealingKey = Redacted.Redacted<Uint8Array>

/**
 * A sealing key from what an application holds: 32 bytes, or their base64 (44 characters) or hex
 * (64 characters), plain or `Redacted`, random enough. The reason never shows the value.
 */
export const sealingKey = (value: unknown): Either.Either<SealingKey, string> => {
  const checked = Core.sealingKeyBytes(reveal(value))
  return checked.ok ? Either.right(Redacted.make(checked.value)) : Either.left(checked.reason)
}

/**
 * A key of its own for one purpose, derived from a sealing key (HKDF-SHA256, the purpose as its
 * info): one key the application holds serves several uses, and the same bytes never serve two.
 */
export const derivedKey = (key: SealingKey, purpose: string): SealingKey =>
  Redacted.make(Core.derivedKeyBytes(Redacted.value(key), purpose))

/** Fewest different byte values a sealing key's 32 bytes may hold (random keys have 30 or so). */
export const MIN_DISTINCT_BYTES = Core.MIN_DISTINCT_BYTES

const keyBytes = (key: SealingKey | undefined) => key === undefined ? undefined : Redacted.value(key)

/**
 * The entry as one string: its fingerprint, `|`, then the entry as JSON, or sealed under `key`
 * and bound to `name` (the key name it is written under).
 */
export const encode = (entry: Entry, key: SealingKey | undefined, name: string): string =>
  Core.encode(entry, Redacted.value, keyBytes(key), name)

/**
 * Why a stored value cannot be read (written to be shown, never the value), and whether it may be
 * a token another instance sealed with another key (or one tampered with: a seal cannot tell).
 */
export interface Unreadable {
  readonly reason: string
  readonly sealedOtherwise: boolean
}

/** An entry and its fingerprint from the stored string, or why it cannot be read (never the value itself). */
export const decode = (
  text: string,
  key: SealingKey | undefined,
  name: string
): Either.Either<{ readonly entry: Entry; readonly fingerprint: string }, Unreadable> => {
  const decoded = Core.decode(text, Redacted.make, keyBytes(key), name)
  return decoded instanceof Core.Unreadable
    ? Either.left({ reason: decoded.reason, sealedOtherwise: decoded.sealedOtherwise })
    : Either.right(decoded)
}
