/**
 * Last line of defence for text we do not write ourselves (server error messages, network error
 * details, a redirect's host): every known secret in it is replaced before the text may enter an
 * error. A server echoes a value in whatever form its framework writes it, so each secret is found
 * in every form it plausibly takes:
 * - in any letter case (.NET writes a Guid in lower case; a proxy may upper-case);
 * - JSON-escaped (`\/`, `\u002B`, `\"`), as a serializer that escapes more than it must writes it;
 * - percent-encoded (`%2F`, `%2b`), as it appears in a URL or a form body, `+` for a space;
 * - a GUID with or without its hyphens (`N` format) or braces (`B` format).
 *
 * How: the text is read into units four ways (as written, JSON escapes decoded, percent-encoding
 * decoded, both), a unit being a character or one escape standing for one, each unit folded (simple
 * case folding, a space as `+`); each secret is read and folded the same ways, and each of its
 * readings is looked for in each of the text's with Knuth-Morris-Pratt. Every reading, because a
 * secret may itself hold what looks like an escape (`%2B` in a URL-encoded PersonUid) and be echoed
 * as written or decoded, a `%` just before a secret may take its first characters for one, and a
 * server may escape one way and not the other. Time is linear in the text and the secrets, whatever
 * either holds: the server chooses both the text and the token, and a backtracking search (a
 * regular expression of every form) took 23 s on the event loop for a token of 4,096 characters
 * that almost repeats one letter, echoed in 64 KiB of that letter; no exception is thrown per
 * character (`decodeURIComponent` on each malformed sequence made such a text 10 times slower), and
 * occurrences are merged in one pass, not sorted. Folding matches a little more than the exact
 * forms (`É` escaped for `é`, a space for a `+`, `ı` for `i`): text is only ever redacted too much,
 * never too little.
 */
import type * as Redacted from "effect/Redacted"
import { isGuid, reveal } from "./validate.js"

/** Longest piece of foreign text kept in an error. */
export const MAX_TEXT = 500

/** What stands in the place of a secret. */
export const REPLACEMENT = "<redacted>"

/** Most foreign text searched for secrets: a longer text is cut first, so the cost stays bounded. */
export const MAX_SEARCHED = 64 * 1024

/** Longest secret searched for; a text that would need a longer one is withheld whole. */
export const MAX_SECRET = 4096

/** Most characters one character of a secret takes once echoed (`%F0%9F%98%80`, `\ud83d\ude00`). */
const MAX_EXPANSION = 12

/** What an error holds in place of text that could not be checked. */
const WITHHELD = "<withheld: the text could not be checked for secrets>"

const SPACE = 0x20
const PLUS = 0x2b
const HYPHEN = 0x2d
const PERCENT = 0x25

const DOTTED_CAPITAL_I = 0x130

/**
 * One UTF-16 unit as it is compared: a space as `+` (its form-encoded form), any other the lower
 * case of its upper case (simple case folding: `ς`, `σ` and `Σ` are one letter, `µ` is `μ`, the
 * Kelvin sign is `k`), and `İ` as `i` (what a Turkish-culture `ToUpper` makes of it; `ı` folds to
 * `i` already). Where two letters of different texts fold alike, both are taken for one: text is
 * redacted too much rather than too little.
 */
const fold = (unit: number): number => {
  if (unit === SPACE) return PLUS
  if (unit >= 0x41 && unit <= 0x5a) return unit + 0x20
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, the general path below folds ASCII the same way (this is the fast path)
  if (unit < 0x80) return unit
  if (unit === DOTTED_CAPITAL_I) return 0x69
  const upper = String.fromCharCode(unit).toUpperCase()
  const single = upper.length === 1 ? upper : String.fromCharCode(unit)
  const lower = single.toLowerCase()
  // Stryker disable next-line ConditionalExpression: equivalent, the one BMP letter whose lower case is two units (İ) is folded above
  return lower.length === 1 ? lower.charCodeAt(0) : single.charCodeAt(0)
}

/** The value of a hexadecimal digit, or -1. */
const hexDigit = (unit: number): number =>
  // Stryker disable next-line ConditionalExpression: equivalent, a unit below "0" gives a negative digit, refused all the same
  unit >= 0x30 && unit <= 0x39
    ? unit - 0x30
    : unit >= 0x61 && unit <= 0x66
    ? unit - 0x57
    : unit >= 0x41 && unit <= 0x46
    ? unit - 0x37
    : -1

/** The value of `digits` hexadecimal digits at `at`, or -1. */
const hexAt = (text: string, at: number, digits: number): number => {
  // Stryker disable next-line ConditionalExpression,ArithmeticOperator,EqualityOperator: equivalent, reading past the end gives no digit either
  if (at + digits > text.length) return -1
  let value = 0
  for (let i = 0; i < digits; i++) {
    const digit = hexDigit(text.charCodeAt(at + i))
    if (digit < 0) return -1
    value = value * 16 + digit
  }
  return value
}

/**
 * The smallest and largest second byte a UTF-8 sequence may have after `lead` (Unicode's table of
 * well-formed sequences): what rules out overlong forms, surrogates and code points past U+10FFFF.
 */
const secondByteRange = (lead: number): readonly [number, number] =>
  lead === 0xe0 ? [0xa0, 0xbf] : lead === 0xed ? [0x80, 0x9f] : lead === 0xf0 ? [0x90, 0xbf] : lead === 0xf4
    ? [0x80, 0x8f]
    : [0x80, 0xbf]

/** How many bytes a UTF-8 sequence has from its lead byte, or 0 when no sequence starts with it. */
const utf8Length = (lead: number): number =>
  lead < 0x80 ? 1 : lead < 0xc2 ? 0 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : lead < 0xf5 ? 4 : 0

/**
 * The code point of the well-formed UTF-8 sequence percent-encoded at `at` (`%C3%A9`), with its
 * length in the text, or undefined when there is none there (then the `%` is a character like any
 * other). Checked by arithmetic, not by `decodeURIComponent`, whose exception on every malformed
 * sequence made a text of them take 15 times as long.
 */
const percentEncoded = (text: string, at: number): readonly [number, number] | undefined => {
  const lead = text.charCodeAt(at) === PERCENT ? hexAt(text, at + 1, 2) : -1
  if (lead < 0) return undefined
  const bytes = utf8Length(lead)
  if (bytes === 0) return undefined
  // The lead's own bits: 7 of a single byte, then 5, 4 or 3.
  let codePoint = bytes === 1 ? lead : lead & (0xff >> (bytes + 1))
  for (let i = 1; i < bytes; i++) {
    // Stryker disable next-line UnaryOperator: equivalent, 1 is below every continuation byte too
    const byte = text.charCodeAt(at + 3 * i) === PERCENT ? hexAt(text, at + 3 * i + 1, 2) : -1
    const [low, high] = i === 1 ? secondByteRange(lead) : [0x80, 0xbf]
    if (byte < low || byte > high) return undefined
    codePoint = (codePoint << 6) | (byte & 0x3f)
  }
  return [codePoint, 3 * bytes]
}

/**
 * Text read as units: each a character of the text, or a JSON escape (`\/`, `\"`, `\\`,
 * `\uXXXX`) or a percent-encoded UTF-8 sequence standing for one; folded, with where each unit
 * stands in the text (a character outside the BMP is two units, both standing for its sequence).
 */
class Units {
  readonly codes: Uint16Array
  readonly starts: Uint32Array
  readonly ends: Uint32Array
  length = 0

  constructor(capacity: number) {
    this.codes = new Uint16Array(capacity)
    this.starts = new Uint32Array(capacity)
    this.ends = new Uint32Array(capacity)
  }

  push(code: number, start: number, end: number): void {
    this.codes[this.length] = fold(code)
    this.starts[this.length] = start
    this.ends[this.length] = end
    this.length++
  }

  /** The same units without hyphens: where a GUID is looked for (with or without them). */
  withoutHyphens(): Units {
    const out = new Units(this.length)
    // Stryker disable next-line EqualityOperator: equivalent, a typed array reads past its length as nothing that matches
    for (let i = 0; i < this.length; i++) {
      if (this.codes[i] !== HYPHEN) out.push(this.codes[i]!, this.starts[i]!, this.ends[i]!)
    }
    return out
  }
}

const BACKSLASH = 0x5c
const SLASH = 0x2f
const QUOTE = 0x22

/**
 * `text` read as units, decoding JSON escapes or not and percent-encoding or not: each of the four
 * readings is searched, because a secret may itself hold what looks like an escape (`%2B` in a
 * URL-encoded PersonUid), a `%` just before a secret may take its first characters for one, and a
 * server may escape the one way and not the other.
 */
const unitsOf = (text: string, json: boolean, percent: boolean): Units => {
  const units = new Units(text.length)
  let at = 0
  // Stryker disable next-line EqualityOperator: equivalent, one unit more past the end matches no secret's units
  while (at < text.length) {
    const unit = text.charCodeAt(at)
    if (json && unit === BACKSLASH) {
      const next = text.charCodeAt(at + 1)
      if (next === SLASH || next === QUOTE || next === BACKSLASH) {
        units.push(next, at, at + 2)
        at += 2
        continue
      }
      const escaped = next === 0x75 || next === 0x55 ? hexAt(text, at + 2, 4) : -1
      if (escaped >= 0) {
        units.push(escaped, at, at + 6)
        at += 6
        continue
      }
    } else if (percent) {
      const decoded = percentEncoded(text, at)
      if (decoded !== undefined) {
        const [codePoint, length] = decoded
        // One unit, or two for a character outside the BMP: each stands for the whole sequence.
        if (codePoint < 0x10000) units.push(codePoint, at, at + length)
        else {
          units.push(0xd800 + ((codePoint - 0x10000) >> 10), at, at + length)
          // Stryker disable next-line ArithmeticOperator: equivalent, adding 0x10000 leaves the low ten bits as subtracting it does
          units.push(0xdc00 + ((codePoint - 0x10000) & 0x3ff), at, at + length)
        }
        at += length
        continue
      }
    }
    units.push(unit, at, at + 1)
    at++
  }
  return units
}

/** The four readings of a text: as written, JSON escapes decoded, percent-encoding decoded, both. */
const READINGS: ReadonlyArray<readonly [json: boolean, percent: boolean]> = [
  [false, false],
  [true, false],
  [false, true],
  [true, true]
]

/** A secret as it is looked for: its folded units, and the Knuth-Morris-Pratt table over them. */
interface Needle {
  readonly codes: Uint16Array
  readonly fallback: Int32Array
  /** A GUID is looked for among the units without hyphens. */
  readonly guid: boolean
}

const needleOf = (codes: Uint16Array, guid: boolean): Needle => {
  // fallback[i]: the length of the longest proper prefix of codes[0..i] that is also its suffix.
  const fallback = new Int32Array(codes.length)
  // Stryker disable next-line EqualityOperator: equivalent, a typed array ignores a write past its end
  for (let i = 1, k = 0; i < codes.length; i++) {
    while (k > 0 && codes[i] !== codes[k]) k = fallback[k - 1]!
    if (codes[i] === codes[k]) k++
    fallback[i] = k
  }
  return { codes, fallback, guid }
}

const HEX_32 = /^[0-9a-f]{32}$/i

/** The 32 digits of a secret that is a GUID (hyphens or not, braces or not), or undefined. */
const guidDigits = (secret: string): string | undefined => {
  const bare = secret.startsWith("{") && secret.endsWith("}") ? secret.slice(1, -1) : secret
  return isGuid(bare) ? bare.replace(/-/g, "") : HEX_32.test(bare) ? bare : undefined
}

/**
 * What a secret is looked for as: a GUID by its digits (among units without hyphens), any other
 * secret in each of its readings (a PersonUid holding `%2B` may be echoed decoded, as `+`).
 */
const needlesOf = (secret: string): Array<Needle> => {
  const digits = guidDigits(secret)
  // Stryker disable next-line BooleanLiteral: equivalent, hexadecimal digits hold nothing to decode
  if (digits !== undefined) return [needleOf(unitsOf(digits, false, false).codes, true)]
  const needles: Array<Needle> = []
  const seen = new Set<string>()
  for (const [json, percent] of READINGS) {
    const units = unitsOf(secret, json, percent)
    const codes = units.codes.subarray(0, units.length)
    const key = String.fromCharCode(...codes)
    // Stryker disable next-line ConditionalExpression: equivalent, a reading looked for twice finds the same occurrences (it only saves the search)
    if (seen.has(key)) continue
    seen.add(key)
    needles.push(needleOf(codes, false))
  }
  return needles
}

/** Records where `needle` occurs among `units`, overlaps included: `reach[start]` is the furthest end of one starting there. */
const occurrences = (units: Units, needle: Needle, reach: Uint32Array): void => {
  const { codes, fallback } = needle
  // Stryker disable next-line EqualityOperator: equivalent, past the units lies nothing a secret of visible text matches
  for (let i = 0, k = 0; i < units.length; i++) {
    while (k > 0 && units.codes[i] !== codes[k]) k = fallback[k - 1]!
    if (units.codes[i] === codes[k]) k++
    if (k === codes.length) {
      const start = units.starts[i - k + 1]!
      reach[start] = Math.max(reach[start]!, units.ends[i]!)
      k = fallback[k - 1]!
    }
  }
}

/**
 * `text` with every occurrence recorded in `reach` replaced: occurrences that overlap or touch are
 * replaced together, once, so that a text made of a secret shrinks rather than grows tenfold.
 * One pass, in the order of the text.
 */
const replaceSpans = (text: string, reach: Uint32Array): string => {
  let out = ""
  let kept = 0
  let replaced = false
  for (let start = 0; start < reach.length; start++) {
    const end = reach[start]!
    if (end === 0) continue
    if (!replaced || start > kept) {
      out += text.slice(kept, start) + REPLACEMENT
      replaced = true
    }
    kept = Math.max(kept, end)
  }
  return replaced ? out + text.slice(kept) : text
}

/** `text` with every occurrence of each needle, in every form, replaced: no length cap. */
const redactAll = (text: string, needles: ReadonlyArray<Needle>): string => {
  // Stryker disable next-line ConditionalExpression: equivalent, with no needle nothing is found (this is the fast path)
  if (needles.length === 0) return text
  const guids = needles.some((needle) => needle.guid)
  const reach = new Uint32Array(text.length)
  // A reading that decodes what the text does not hold is the text as written: not searched again.
  // Stryker disable next-line StringLiteral: equivalent, a reading with nothing to decode is searched again to the same effect (this saves the search)
  const escapes = text.includes("\\")
  // Stryker disable next-line StringLiteral: equivalent, as above
  const encoded = text.includes("%")
  for (const [json, percent] of READINGS) {
    // Stryker disable next-line ConditionalExpression,LogicalOperator,BooleanLiteral: equivalent, as above
    if ((json && !escapes) || (percent && !encoded)) continue
    const units = unitsOf(text, json, percent)
    const hyphenless = guids ? units.withoutHyphens() : units
    for (const needle of needles) occurrences(needle.guid ? hyphenless : units, needle, reach)
  }
  return replaceSpans(text, reach)
}

/** The secrets that are not empty, as text. */
const valuesOf = (secrets: Iterable<Redacted.Redacted<string> | string>): Array<string> => {
  const values: Array<string> = []
  for (const secret of secrets) {
    const value = reveal(secret)
    // Stryker disable next-line ConditionalExpression: equivalent, a secret is a string (or a Redacted of one): it only skips the check below
    if (typeof value !== "string") continue
    if (value.length > 0) values.push(value)
  }
  return values
}

/**
 * Replaces every occurrence of each secret, in every form it may be echoed in, with `<redacted>`
 * (overlapping occurrences together), then caps the length at {@link MAX_TEXT}. The text is
 * scrubbed before it is cut, so no piece of a secret survives the cut. A text longer than
 * {@link MAX_SEARCHED} is searched only that far, and then its last stretch (as long as a secret's
 * longest form) is dropped too, since a secret may straddle that first cut. Never throws.
 */
export const scrub = (text: string, secrets: Iterable<Redacted.Redacted<string> | string>): string =>
  scrubber(secrets)(text)

/** {@link scrub} for many texts and the same secrets: the secrets are prepared once. */
export const scrubber = (secrets: Iterable<Redacted.Redacted<string> | string>): (text: string) => string => {
  const values = valuesOf(secrets)
  const longest = values.reduce((most, value) => Math.max(most, value.length), 0)
  // The tail cut below is as long as the longest secret's longest form: a bound is kept on both.
  if (longest > MAX_SECRET) return () => WITHHELD
  const needles = values.flatMap(needlesOf)
  return (text) => {
    // Stryker disable next-line EqualityOperator: at exactly the limit, what the tail cut drops is past the 500 characters kept
    const cut = text.length > MAX_SEARCHED
    // Stryker disable next-line MethodExpression: searching the whole text costs more, and changes nothing of the 500 characters kept
    let out = redactAll(cut ? text.slice(0, MAX_SEARCHED) : text, needles)
    if (cut) out = out.slice(0, Math.max(0, out.length - MAX_EXPANSION * longest))
    return out.length > MAX_TEXT || cut ? `${out.slice(0, MAX_TEXT)}...` : out
  }
}

/**
 * Every occurrence of `secret` in `text`, in every form above, replaced with `<redacted>`, however
 * long the text: for values that are not cut (a person's items before they are printed).
 */
export const redactEvery = (text: string, secret: string): string =>
  redactAll(text, valuesOf([secret]).flatMap(needlesOf))
