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
 * How: the text is read into units twice, once as it is written (each character a unit) and once
 * decoded (a character, or one escape or percent-encoded sequence standing for a character), each
 * unit folded (the case a case-insensitive search compares, a space as `+`), and each secret, folded
 * the same way, is looked for in both with Knuth-Morris-Pratt. Both, because a secret may itself
 * hold what looks like an escape (`%2B` in a URL-encoded PersonUid), and a `%` just before a secret
 * may take its first characters for one. Time is linear in the text and the secrets, whatever
 * either holds: the server chooses both the text and the token, and a backtracking search (a
 * regular expression of every form) took 23 s on the event loop for a token of 4,096 characters
 * that almost repeats one letter, echoed in 64 KiB of that letter. Folding
 * matches a little more than the exact forms (`É` escaped for `é`, a space for a `+`): text is only
 * ever redacted too much, never too little.
 */
import * as Redacted from "effect/Redacted"
import { isGuid } from "./validate.js"

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

/**
 * One UTF-16 unit as it is compared: ASCII in lower case, a space as `+` (its form-encoded form),
 * anything else in upper case as a case-insensitive regular expression compares it (so `ς`, `σ`
 * and `Σ` are one letter, and `µ` is `Μ`), unless that upper case is ASCII (`ı` is not `I`).
 */
const fold = (unit: number): number => {
  if (unit === SPACE) return PLUS
  if (unit >= 0x41 && unit <= 0x5a) return unit + 0x20
  if (unit < 0x80) return unit
  const upper = String.fromCharCode(unit).toUpperCase()
  return upper.length === 1 && upper.charCodeAt(0) >= 0x80 ? upper.charCodeAt(0) : unit
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

/** How many bytes a UTF-8 sequence has, from its lead byte (at least 0xC0). */
const utf8Length = (lead: number): number => (lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4)

/**
 * The character of the UTF-8 sequence percent-encoded at `at` (`%C3%A9`), with its length in the
 * text, or undefined when there is none there (then the `%` is a character like any other). The
 * lead byte says how long the sequence is; `decodeURIComponent` refuses the rest when it is not
 * UTF-8 (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF).
 */
const percentEncoded = (text: string, at: number): readonly [string, number] | undefined => {
  const lead = text.charCodeAt(at) === PERCENT ? hexAt(text, at + 1, 2) : -1
  if (lead < 0) return undefined
  // Stryker disable next-line EqualityOperator: equivalent, 0xC0 leads no UTF-8 sequence: refused either way
  const length = 3 * (lead < 0xc0 ? 1 : utf8Length(lead))
  // Stryker disable BlockStatement: equivalent, an empty catch returns undefined all the same
  try {
    return [decodeURIComponent(text.slice(at, at + length)), length]
  } catch {
    return undefined
  }
}
// Stryker restore BlockStatement

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

const unitsOf = (text: string): Units => {
  const units = new Units(text.length)
  let at = 0
  // Stryker disable next-line EqualityOperator: equivalent, one unit more past the end matches no secret's units
  while (at < text.length) {
    const unit = text.charCodeAt(at)
    if (unit === BACKSLASH) {
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
    } else {
      const decoded = percentEncoded(text, at)
      if (decoded !== undefined) {
        const [character, length] = decoded
        // One unit, or two for a character outside the BMP: each stands for the whole sequence.
        for (let i = 0; i < character.length; i++) units.push(character.charCodeAt(i), at, at + length)
        at += length
        continue
      }
    }
    units.push(unit, at, at + 1)
    at++
  }
  return units
}

/** Text read as units as it is written: each character one unit, nothing decoded. */
const asWritten = (text: string): Units => {
  const units = new Units(text.length)
  for (let at = 0; at < text.length; at++) units.push(text.charCodeAt(at), at, at + 1)
  return units
}

/** A secret as it is looked for: its folded units, and the Knuth-Morris-Pratt table over them. */
interface Needle {
  readonly codes: Uint16Array
  readonly fallback: Int32Array
  /** A GUID is looked for among the units without hyphens. */
  readonly guid: boolean
}

const needleOf = (secret: string): Needle => {
  const guid = isGuid(secret)
  const text = guid ? secret.replace(/[{}-]/g, "") : secret
  const codes = new Uint16Array(text.length)
  // Stryker disable next-line EqualityOperator: equivalent, a typed array ignores a write past its end
  for (let i = 0; i < text.length; i++) codes[i] = fold(text.charCodeAt(i))
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

/** Adds the spans of text (start, end) where `needle` occurs among `units`, overlaps included. */
const occurrences = (units: Units, needle: Needle, out: Array<number>): void => {
  const { codes, fallback } = needle
  // Stryker disable next-line EqualityOperator: equivalent, past the units lies nothing a secret of visible text matches
  for (let i = 0, k = 0; i < units.length; i++) {
    while (k > 0 && units.codes[i] !== codes[k]) k = fallback[k - 1]!
    if (units.codes[i] === codes[k]) k++
    if (k === codes.length) {
      out.push(units.starts[i - k + 1]!, units.ends[i]!)
      k = fallback[k - 1]!
    }
  }
}

/** `text` with every span in `spans` (pairs of start and end, any order, overlapping) replaced once. */
const replaceSpans = (text: string, spans: ReadonlyArray<number>): string => {
  // Stryker disable next-line ConditionalExpression: equivalent, the loop below returns the text as it is too (this is the fast path)
  if (spans.length === 0) return text
  const order = Array.from({ length: spans.length / 2 }, (_, i) => i).sort((a, b) => spans[2 * a]! - spans[2 * b]!)
  let out = ""
  let kept = 0
  for (const i of order) {
    const start = spans[2 * i]!
    const end = spans[2 * i + 1]!
    // A span that begins within the one before it is already replaced: it only extends it.
    if (start >= kept) out += text.slice(kept, start) + REPLACEMENT
    kept = Math.max(kept, end)
  }
  return out + text.slice(kept)
}

const valueOf = (secret: Redacted.Redacted<string> | string): unknown =>
  Redacted.isRedacted(secret) ? Redacted.value(secret) : secret

/** `text` with every occurrence of each needle, in every form, replaced: no length cap. */
const redactAll = (text: string, needles: ReadonlyArray<Needle>): string => {
  // Stryker disable next-line ConditionalExpression: equivalent, with no needle nothing is found (this is the fast path)
  if (needles.length === 0) return text
  const guids = needles.some((needle) => needle.guid)
  const spans: Array<number> = []
  for (const units of [unitsOf(text), asWritten(text)]) {
    const hyphenless = guids ? units.withoutHyphens() : units
    for (const needle of needles) occurrences(needle.guid ? hyphenless : units, needle, spans)
  }
  return replaceSpans(text, spans)
}

/** The secrets that are not empty, as text. */
const valuesOf = (secrets: Iterable<Redacted.Redacted<string> | string>): Array<string> => {
  const values: Array<string> = []
  for (const secret of secrets) {
    const value = valueOf(secret)
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
  const needles = values.map(needleOf)
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
export const redactEvery = (text: string, secret: string): string => redactAll(text, valuesOf([secret]).map(needleOf))
