/**
 * Last line of defence for text we do not write ourselves (server error messages, network error
 * details, a redirect's host): every known secret in it is replaced before the text may enter an
 * error. A server echoes a value in whatever form its framework writes it, so each secret is found
 * in every form it plausibly takes:
 * - in any letter case (.NET writes a Guid in lower case; a proxy may upper-case), with full case
 *   folding (`STRASSE` for `straße`);
 * - JSON-escaped (`\/`, `\u002B`, `\"`), as a serializer that escapes more than it must writes it;
 * - percent-encoded (`%2F`, `%2b`), as it appears in a URL or a form body, `+` for a space;
 * - HTML- or XML-escaped (`&amp;`, `&#39;`, `&apos;`, `&#x3D;`);
 * - any of these applied again, up to {@link MAX_DECODINGS} deep (`%252B`, JSON inside a JSON
 *   string, an entity percent-encoded);
 * - a GUID with or without its hyphens (`N` format) or braces (`B` format), any other secret
 *   without its hyphens too;
 * - a secret encoded alone in base64 or base64url, padded or not.
 *
 * How: the text is read into units several ways (as written; JSON escapes decoded; percent-encoding
 * decoded; then every kind decoded, again and again until a reading decodes nothing), a unit being
 * a character or one escape standing for one, with where it stands in the text. Each unit is folded
 * for comparison (full case folding, a space as `+`); each secret is read and folded the same ways,
 * and each of its readings is looked for in each of the text's with Knuth-Morris-Pratt. Every
 * reading, because a secret may itself hold what looks like an escape (`%2B` in a URL-encoded
 * PersonUid) and be echoed as written or decoded, a `%` just before a secret may take its first
 * characters for one, and a server may escape one way and not the other. Time is linear in the
 * text and the secrets, whatever either holds: the server chooses both the text and the token, and
 * a backtracking search (a regular expression of every form) took 23 s on the event loop for a
 * token of 4,096 characters that almost repeats one letter, echoed in 64 KiB of that letter; no
 * exception is thrown per character, and occurrences are merged in one pass, not sorted. Folding
 * matches a little more than the exact forms (`É` escaped for `é`, a space for a `+`, `ı` for
 * `i`): text is only ever redacted too much, never too little.
 *
 * Foreign text is scrubbed by shape as well (unless asked not to): every GUID, long base64 run
 * and date in any reading of it, whatever its value (see `secretShapes`). A person's items are not
 * ({@link redactor}): they are the data asked for, dates and codes included.
 */
import type * as Redacted from "effect/Redacted"
import { shapesIn } from "./secretShapes.js"
import { isGuid, reveal } from "./validate.js"

/** Longest piece of foreign text kept in an error. */
export const MAX_TEXT = 500

/** What stands in the place of a secret. */
export const REPLACEMENT = "<redacted>"

/** Most foreign text searched for secrets: a longer text is cut first, so the cost stays bounded. */
export const MAX_SEARCHED = 64 * 1024

/** Longest secret searched for; a text that would need a longer one is withheld whole. */
export const MAX_SECRET = 4096

/** Most rounds of decoding a text is read through (an escape inside an escape inside an escape). */
export const MAX_DECODINGS = 4

/**
 * Most characters one character of a secret takes once echoed, up to three encodings deep:
 * `%25F0%259F%2598%2580` for two units, `\\u002B`, `&#x10FFFF;`.
 */
const MAX_EXPANSION = 15

/** Shortest base64 of a secret looked for: 8 characters, the encoding of 6 bytes. */
const MIN_ENCODED = 8

/** What an error holds in place of text that could not be checked. */
const WITHHELD = "<withheld: the text could not be checked for secrets>"

const SPACE = 0x20
const PLUS = 0x2b
const HYPHEN = 0x2d
const PERCENT = 0x25
const BACKSLASH = 0x5c
const SLASH = 0x2f
const QUOTE = 0x22
const AMPERSAND = 0x26
const HASH = 0x23
const SEMICOLON = 0x3b

const DOTTED_CAPITAL_I = 0x130

/** Folds of the units outside ASCII, worked out once each. */
const nonAsciiFolds = new Map<number, number | ReadonlyArray<number>>()

/**
 * A unit outside ASCII as it is compared: the lower case of the upper case of its lower case
 * (full case folding: `ς`, `σ` and `Σ` are one letter, `µ` is `μ`, the Kelvin sign is `k`, and `ß`
 * and `ẞ` are `ss`, as `STRASSE` writes them); `İ` as `i` (what a Turkish-culture `ToUpper` makes
 * of it; `ı` folds to `i` already). Several units where the folding makes several.
 */
const foldNonAscii = (unit: number): number | ReadonlyArray<number> => {
  if (unit === DOTTED_CAPITAL_I) return 0x69
  const folded = String.fromCharCode(unit).toLowerCase().toUpperCase().toLowerCase()
  return folded.length === 1 ? folded.charCodeAt(0) : folded.split("").map((c) => c.charCodeAt(0))
}

/**
 * One UTF-16 unit as it is compared: a space as `+` (its form-encoded form), an ASCII letter in
 * lower case, anything else through {@link foldNonAscii}. Where two letters of different texts fold
 * alike, both are taken for one: text is redacted too much rather than too little.
 */
const fold = (unit: number): number | ReadonlyArray<number> => {
  if (unit === SPACE) return PLUS
  if (unit >= 0x41 && unit <= 0x5a) return unit + 0x20
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, the general path folds ASCII the same way (this is the fast path)
  if (unit < 0x80) return unit
  let folded = nonAsciiFolds.get(unit)
  if (folded === undefined) {
    folded = foldNonAscii(unit)
    nonAsciiFolds.set(unit, folded)
  }
  return folded
}

/** The value of a hexadecimal digit, or -1. */
const hexDigit = (unit: number | undefined): number =>
  unit === undefined
    ? -1
    // Stryker disable next-line ConditionalExpression: equivalent, a unit below "0" gives a negative digit, refused all the same
    : unit >= 0x30 && unit <= 0x39
    ? unit - 0x30
    : unit >= 0x61 && unit <= 0x66
    ? unit - 0x57
    : unit >= 0x41 && unit <= 0x46
    ? unit - 0x37
    : -1

/** The value of `digits` hexadecimal digits at `at`, or -1. */
const hexAt = (codes: ReadonlyArray<number>, at: number, digits: number): number => {
  let value = 0
  for (let i = 0; i < digits; i++) {
    const digit = hexDigit(codes[at + i])
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
 * The code point of the well-formed UTF-8 sequence percent-encoded at `at` (`%C3%A9`), with the
 * number of units it takes, or undefined when there is none there (then the `%` is a character
 * like any other). Checked by arithmetic, not by `decodeURIComponent`, whose exception on every
 * malformed sequence made a text of them take 15 times as long.
 */
const percentEncoded = (codes: ReadonlyArray<number>, at: number): readonly [number, number] | undefined => {
  const lead = codes[at] === PERCENT ? hexAt(codes, at + 1, 2) : -1
  if (lead < 0) return undefined
  const bytes = utf8Length(lead)
  if (bytes === 0) return undefined
  // The lead's own bits: 7 of a single byte, then 5, 4 or 3.
  let codePoint = bytes === 1 ? lead : lead & (0xff >> (bytes + 1))
  for (let i = 1; i < bytes; i++) {
    // Stryker disable next-line UnaryOperator: equivalent, 1 is below every continuation byte too
    const byte = codes[at + 3 * i] === PERCENT ? hexAt(codes, at + 3 * i + 1, 2) : -1
    const [low, high] = i === 1 ? secondByteRange(lead) : [0x80, 0xbf]
    if (byte < low || byte > high) return undefined
    codePoint = (codePoint << 6) | (byte & 0x3f)
  }
  return [codePoint, 3 * bytes]
}

/** The JSON escape at `at` (`\/`, `\"`, `\\`, `\uXXXX`): its unit and length, or undefined. */
const jsonEscaped = (codes: ReadonlyArray<number>, at: number): readonly [number, number] | undefined => {
  if (codes[at] !== BACKSLASH) return undefined
  const next = codes[at + 1]
  if (next === SLASH || next === QUOTE || next === BACKSLASH) return [next, 2]
  const escaped = next === 0x75 || next === 0x55 ? hexAt(codes, at + 2, 4) : -1
  return escaped >= 0 ? [escaped, 6] : undefined
}

/**
 * The named references an HTML or XML serializer writes for a character of a secret (ASCII
 * punctuation: a token's `+`, `/` and `=`, a pass code's anything), as HTML5 names them.
 */
const ENTITIES: ReadonlyMap<string, number> = new Map([
  ...["amp", "AMP"].map((name) => [name, 0x26] as const),
  ...["lt", "LT"].map((name) => [name, 0x3c] as const),
  ...["gt", "GT"].map((name) => [name, 0x3e] as const),
  ...["quot", "QUOT"].map((name) => [name, 0x22] as const),
  ...Object.entries({
    apos: 0x27,
    excl: 0x21,
    num: 0x23,
    dollar: 0x24,
    percnt: 0x25,
    lpar: 0x28,
    rpar: 0x29,
    ast: 0x2a,
    plus: 0x2b,
    comma: 0x2c,
    period: 0x2e,
    sol: 0x2f,
    colon: 0x3a,
    semi: 0x3b,
    equals: 0x3d,
    quest: 0x3f,
    commat: 0x40,
    lsqb: 0x5b,
    bsol: 0x5c,
    rsqb: 0x5d,
    Hat: 0x5e,
    lowbar: 0x5f,
    grave: 0x60,
    lcub: 0x7b,
    verbar: 0x7c,
    rcub: 0x7d,
    nbsp: 0xa0
  })
])

/** Longest entity name above. */
const LONGEST_ENTITY = 6

const isDigit = (unit: number | undefined): boolean => unit !== undefined && unit >= 0x30 && unit <= 0x39

/**
 * The HTML or XML character reference at `at` (`&amp;`, `&#39;`, `&#x3D;`): its code point and
 * length, or undefined.
 */
const entityEscaped = (codes: ReadonlyArray<number>, at: number): readonly [number, number] | undefined => {
  if (codes[at] !== AMPERSAND) return undefined
  if (codes[at + 1] === HASH) {
    const hex = codes[at + 2] === 0x78 || codes[at + 2] === 0x58
    let value = 0
    let end = at + (hex ? 3 : 2)
    const first = end
    for (; end - first < (hex ? 6 : 7); end++) {
      const digit = hex ? hexDigit(codes[end]) : isDigit(codes[end]) ? codes[end]! - 0x30 : -1
      if (digit < 0) break
      value = value * (hex ? 16 : 10) + digit
    }
    return end > first && codes[end] === SEMICOLON && value <= 0x10ffff ? [value, end + 1 - at] : undefined
  }
  let name = ""
  for (let end = at + 1; end <= at + 1 + LONGEST_ENTITY; end++) {
    const unit = codes[end]
    if (unit === SEMICOLON) {
      const value = ENTITIES.get(name)
      return value === undefined ? undefined : [value, end + 1 - at]
    }
    if (unit === undefined || !((unit >= 0x41 && unit <= 0x5a) || (unit >= 0x61 && unit <= 0x7a))) return undefined
    name += String.fromCharCode(unit)
  }
  return undefined
}

/** Which escapes a reading decodes. */
interface Decoding {
  readonly json: boolean
  readonly percent: boolean
  readonly entities: boolean
}

const JSON_ONLY: Decoding = { json: true, percent: false, entities: false }
const PERCENT_ONLY: Decoding = { json: false, percent: true, entities: false }
const EVERY_KIND: Decoding = { json: true, percent: true, entities: true }

/**
 * Text read as units: each a character of the text, or an escape standing for one (its code as
 * written, not folded), with where it stands in the text (a character outside the BMP is two
 * units, both standing for its whole escape). Plain arrays: typed arrays cost several
 * microseconds each to allocate, and a text is read several ways.
 */
class Units {
  readonly codes: Array<number> = []
  readonly starts: Array<number> = []
  readonly ends: Array<number> = []

  push(code: number, start: number, end: number): void {
    this.codes.push(code)
    this.starts.push(start)
    this.ends.push(end)
  }

  /** A code point: one unit, or two for one outside the BMP. */
  pushCodePoint(codePoint: number, start: number, end: number): void {
    if (codePoint < 0x10000) return this.push(codePoint, start, end)
    this.push(0xd800 + ((codePoint - 0x10000) >> 10), start, end)
    // Stryker disable next-line ArithmeticOperator: equivalent, adding 0x10000 leaves the low ten bits as subtracting it does
    this.push(0xdc00 + ((codePoint - 0x10000) & 0x3ff), start, end)
  }

  /** The units as text, as a pattern reads them. */
  text(): string {
    let out = ""
    for (let at = 0; at < this.codes.length; at += 8192) {
      out += String.fromCharCode(...this.codes.slice(at, at + 8192))
    }
    return out
  }
}

/** `text` as written: one unit per UTF-16 unit. */
const asWritten = (text: string): Units => {
  const units = new Units()
  for (let at = 0; at < text.length; at++) units.push(text.charCodeAt(at), at, at + 1)
  return units
}

/**
 * `units` with the escapes of the kinds asked for decoded, each read from the units as they are
 * (an escape made by decoding is decoded in the next round), or undefined when there was none.
 */
const decoded = (units: Units, decoding: Decoding): Units | undefined => {
  const { codes, ends, starts } = units
  const out = new Units()
  let found = false
  let at = 0
  while (at < codes.length) {
    const escape = (decoding.json ? jsonEscaped(codes, at) : undefined) ??
      (decoding.percent ? percentEncoded(codes, at) : undefined) ??
      (decoding.entities ? entityEscaped(codes, at) : undefined)
    if (escape === undefined) {
      out.push(codes[at]!, starts[at]!, ends[at]!)
      at++
      continue
    }
    const [codePoint, length] = escape
    out.pushCodePoint(codePoint, starts[at]!, ends[at + length - 1]!)
    found = true
    at += length
  }
  return found ? out : undefined
}

/**
 * The readings of `text`: as written; JSON escapes alone and percent-encoding alone decoded (when
 * it holds both kinds: a secret may hold what looks like the other kind); then every kind decoded,
 * round after round, until a round decodes nothing or {@link MAX_DECODINGS} rounds are done.
 */
const readingsOf = (text: string): Array<Units> => {
  const written = asWritten(text)
  const readings = [written]
  const kinds = [text.includes("\\"), text.includes("%"), text.includes("&")].filter(Boolean).length
  // Stryker disable next-line ConditionalExpression: equivalent, a text with one kind of escape reads the same through the rounds below
  if (kinds > 1) {
    for (const decoding of [JSON_ONLY, PERCENT_ONLY]) {
      const reading = decoded(written, decoding)
      if (reading !== undefined) readings.push(reading)
    }
  }
  let current: Units | undefined = written
  for (let round = 0; round < MAX_DECODINGS && kinds > 0; round++) {
    current = decoded(current, EVERY_KIND)
    if (current === undefined) break
    readings.push(current)
  }
  return readings
}

/** Units folded for comparison, with where each stands in the text; one unit may fold to several. */
interface Folded {
  readonly codes: Array<number>
  readonly starts: Array<number>
  readonly ends: Array<number>
}

/** `units` folded; without hyphens when `hyphenless` (where a GUID is looked for, with or without them). */
const foldedOf = (units: Units, hyphenless: boolean): Folded => {
  const folded: Folded = { codes: [], starts: [], ends: [] }
  const { codes, ends, starts } = units
  for (let i = 0; i < codes.length; i++) {
    const code = fold(codes[i]!)
    if (typeof code === "number") {
      if (hyphenless && code === HYPHEN) continue
      folded.codes.push(code)
      folded.starts.push(starts[i]!)
      folded.ends.push(ends[i]!)
    } else {
      for (const part of code) {
        folded.codes.push(part)
        folded.starts.push(starts[i]!)
        folded.ends.push(ends[i]!)
      }
    }
  }
  return folded
}

/**
 * Where a needle of what is left of a secret must stand: right after (`start`) or before (`end`)
 * an escape of the text whose written form ends (or begins) with the secret's characters it took
 * (`eaten`, folded). A text can hold an escape that takes a secret's first or last characters for
 * part of itself (`\u00` just before `aa\u002B...`, `%` before `4f%2B...`): decoded, the secret
 * is no longer there whole, and written, its own escapes hide it.
 */
interface Anchor {
  readonly side: "start" | "end"
  readonly eaten: ReadonlyArray<number>
}

/** A secret as it is looked for: its folded units, and the Knuth-Morris-Pratt table over them. */
interface Needle {
  readonly codes: ReadonlyArray<number>
  readonly fallback: ReadonlyArray<number>
  /** Looked for among the units without hyphens (a GUID's digits, a pass code written without its hyphens). */
  readonly hyphenless: boolean
  readonly anchor?: Anchor | undefined
}

const needleOf = (codes: ReadonlyArray<number>, hyphenless: boolean, anchor?: Anchor): Needle => {
  // fallback[i]: the length of the longest proper prefix of codes[0..i] that is also its suffix.
  const fallback = [0]
  for (let i = 1, k = 0; i < codes.length; i++) {
    while (k > 0 && codes[i] !== codes[k]) k = fallback[k - 1]!
    if (codes[i] === codes[k]) k++
    fallback.push(k)
  }
  return { codes, fallback, hyphenless, anchor }
}

const HEX_32 = /^[0-9a-f]{32}$/i

/** The 32 digits of a secret that is a GUID (hyphens or not, braces or not), or undefined. */
const guidDigits = (secret: string): string | undefined => {
  const bare = secret.startsWith("{") && secret.endsWith("}") ? secret.slice(1, -1) : secret
  return isGuid(bare) ? bare.replace(/-/g, "") : HEX_32.test(bare) ? bare : undefined
}

/**
 * What a secret is looked for as: a GUID by its digits (among units without hyphens); any other
 * secret in each of its readings (a PersonUid holding `%2B` may be echoed decoded, as `+`), without
 * its hyphens too (a service may normalise `EW-2719-KQ` to `EW2719KQ`), and as its base64 and
 * base64url (a secret encoded alone; base64 inside a longer encoding has other digits, and is
 * redacted by shape).
 */
const needlesOf = (secret: string): Array<Needle> => {
  const digits = guidDigits(secret)
  if (digits !== undefined) return [needleOf(foldedOf(asWritten(digits), false).codes, true)]
  const needles: Array<Needle> = []
  const seen = new Set<string>()
  const add = (reading: Units, hyphenless: boolean) => {
    const codes = foldedOf(reading, hyphenless).codes
    const key = `${hyphenless}:${codes.join(",")}`
    // Stryker disable next-line ConditionalExpression: equivalent, a reading looked for twice finds the same occurrences (it only saves the search)
    if (codes.length === 0 || seen.has(key)) return
    seen.add(key)
    needles.push(needleOf(codes, hyphenless))
  }
  for (const reading of readingsOf(secret)) {
    add(reading, false)
    if (reading.codes.includes(HYPHEN)) add(reading, true)
    for (const anchored of anchoredNeedles(foldedOf(reading, false).codes)) {
      const key = `${anchored.anchor!.side}:${anchored.anchor!.eaten.join(",")}:${anchored.codes.join(",")}`
      if (!seen.has(key)) {
        seen.add(key)
        needles.push(anchored)
      }
    }
  }
  const bytes = Buffer.from(secret, "utf8")
  // base64url has no padding: looked for that way, the padded form is found too, and its padding
  // with it. Not for a secret of a few bytes, whose encoding is too short to tell from any text.
  for (const encoded of [bytes.toString("base64"), bytes.toString("base64url")]) {
    if (encoded.length >= MIN_ENCODED) add(asWritten(encoded), false)
  }
  return needles
}

/** The longest stretch of a secret an escape can take: the four digits of `\uXXXX`. */
const MAX_EATEN = 4

/** Fewest units of a secret left for an anchored needle: fewer would say little, anchored or not. */
const MIN_LEFT = 4

const isHexUnit = (unit: number): boolean => hexDigit(unit) >= 0

/** The start of an escape, cut short: what a secret may end with and the text go on from. */
const ESCAPE_START = /^(?:%[0-9a-f]?|\\(?:u[0-9a-f]{0,3})?|&#?x?[0-9a-z]{0,5})$/

/**
 * The needles of what is left of a secret (its folded `codes`) when an escape of the text takes its
 * first characters (hex digits, as `%XX` and `\uXXXX` take them) or its last (the start of an
 * escape: `%`, `\u0`, `&am`), each anchored to that escape.
 */
const anchoredNeedles = (codes: ReadonlyArray<number>): Array<Needle> => {
  const needles: Array<Needle> = []
  for (let eaten = 1; eaten <= MAX_EATEN && codes.length - eaten >= MIN_LEFT; eaten++) {
    const head = codes.slice(0, eaten)
    if (head.every(isHexUnit)) {
      needles.push(needleOf(codes.slice(eaten), false, { side: "start", eaten: head }))
    }
    const tail = codes.slice(codes.length - eaten)
    if (ESCAPE_START.test(String.fromCharCode(...tail))) {
      needles.push(needleOf(codes.slice(0, codes.length - eaten), false, { side: "end", eaten: tail }))
    }
  }
  return needles
}

/** Whether the written text from `at` holds `eaten`, folded. */
const holdsAt = (text: string, at: number, eaten: ReadonlyArray<number>): boolean => {
  for (let i = 0; i < eaten.length; i++) {
    if (at + i < 0 || at + i >= text.length || fold(text.charCodeAt(at + i)) !== eaten[i]) return false
  }
  return true
}

/** Records that `[start, end)` of the text is to be replaced: `reach[start]` is the furthest end of one starting there. */
const mark = (reach: Array<number>, start: number, end: number): void => {
  if (end > reach[start]!) reach[start] = end
}

/**
 * Marks an occurrence of `needle` among the units `first` to `last`: as it is, or, for an anchored
 * needle, only with the escape it is anchored to (whose written form holds what it took of the
 * secret), which is then replaced with it.
 */
const found = (units: Folded, needle: Needle, first: number, last: number, text: string, reach: Array<number>) => {
  const { anchor } = needle
  if (anchor === undefined) return mark(reach, units.starts[first]!, units.ends[last]!)
  const at = anchor.side === "start" ? first - 1 : last + 1
  const start = units.starts[at]
  const end = units.ends[at]
  // Stryker disable next-line ConditionalExpression: equivalent, past the units there is no escape that holds anything
  if (start === undefined || end === undefined || end - start < 2) return
  const taken = anchor.side === "start"
    ? holdsAt(text, end - anchor.eaten.length, anchor.eaten)
    : holdsAt(text, start, anchor.eaten)
  if (!taken) return
  if (anchor.side === "start") mark(reach, start, units.ends[last]!)
  else mark(reach, units.starts[first]!, end)
}

/** Records where `needle` occurs among `units` (a reading of `text`), overlaps included. */
const occurrences = (units: Folded, needle: Needle, reach: Array<number>, text: string): void => {
  const { codes, fallback } = needle
  const read = units.codes
  for (let i = 0, k = 0; i < read.length; i++) {
    while (k > 0 && read[i] !== codes[k]) k = fallback[k - 1]!
    if (read[i] === codes[k]) k++
    if (k === codes.length) {
      found(units, needle, i - k + 1, i, text, reach)
      k = fallback[k - 1]!
    }
  }
}

/**
 * `text` with every occurrence recorded in `reach` replaced: occurrences that overlap or touch are
 * replaced together, once, so that a text made of a secret shrinks rather than grows tenfold.
 * One pass, in the order of the text.
 */
const replaceSpans = (text: string, reach: ReadonlyArray<number>): string => {
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

/**
 * `text` with every stretch that `find` marks replaced (stretches that overlap or touch together):
 * for text that needs no decoding, such as a value a user typed.
 */
export const redactMarked = (
  text: string,
  find: (text: string, mark: (start: number, end: number) => void) => void
): string => {
  const reach = new Array<number>(text.length).fill(0)
  find(text, (start, end) => mark(reach, start, end))
  return replaceSpans(text, reach)
}

/** What a scrubber looks for: the known secrets, and (in server text) what has the shape of one. */
interface Search {
  readonly needles: ReadonlyArray<Needle>
  readonly shapes: boolean
}

/** `text` with every occurrence of each needle, in every form, replaced (and every shape, when asked): no length cap. */
const redactAll = (text: string, { needles, shapes }: Search): string => {
  // Every unit stands for at least one character: a text shorter than every needle holds none.
  let shortest = Infinity
  for (const needle of needles) shortest = Math.min(shortest, needle.codes.length)
  // Stryker disable next-line ConditionalExpression: equivalent, a text too short for any needle has none found in it (this is the fast path)
  if (!shapes && text.length < shortest) return text
  const hyphenless = needles.some((needle) => needle.hyphenless)
  const reach = new Array<number>(text.length).fill(0)
  const readings = readingsOf(text)
  for (const units of readings) {
    if (needles.length > 0) {
      const folded = foldedOf(units, false)
      const withoutHyphens = hyphenless ? foldedOf(units, true) : folded
      for (const needle of needles) occurrences(needle.hyphenless ? withoutHyphens : folded, needle, reach, text)
    }
    if (shapes) {
      // The reading as written is the text itself: not built again.
      shapesIn(
        units === readings[0] ? text : units.text(),
        (start, end) => mark(reach, units.starts[start]!, units.ends[end - 1]!)
      )
    }
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

/** A scrubber over prepared secrets: searched, cut and capped as {@link scrub} says. */
const capped = (
  secrets: Iterable<Redacted.Redacted<string> | string>,
  shapes: boolean
): (text: string) => string => {
  const values = valuesOf(secrets)
  const longest = values.reduce((most, value) => Math.max(most, value.length), 0)
  // The tail cut below is as long as the longest secret's longest form: a bound is kept on both.
  if (longest > MAX_SECRET) return () => WITHHELD
  const search: Search = { needles: values.flatMap(needlesOf), shapes }
  return (text) => {
    const cut = text.length > MAX_SEARCHED
    let out = redactAll(cut ? text.slice(0, MAX_SEARCHED) : text, search)
    if (cut) out = out.slice(0, Math.max(0, out.length - MAX_EXPANSION * longest))
    return out.length > MAX_TEXT || cut ? `${out.slice(0, MAX_TEXT)}...` : out
  }
}

/** How foreign text is scrubbed. */
export interface ScrubOptions {
  /**
   * Also redact whatever has the shape of a secret, whatever its value: every GUID, long base64
   * run and date, in any reading of the text (see `secretShapes`). Default true: text a server or
   * a network wrote may echo a secret in an encoding no list of forms foresees. False: the known
   * secrets alone.
   */
  readonly byShape?: boolean | undefined
}

/**
 * Replaces every occurrence of each secret, in every form it may be echoed in, with `<redacted>`
 * (overlapping occurrences together), and whatever has the shape of a secret (unless `byShape` is
 * false), then caps the length at {@link MAX_TEXT}. The text is scrubbed before it is cut, so no
 * piece of a secret survives the cut. A text longer than {@link MAX_SEARCHED} is searched only that
 * far, and then its last stretch (as long as a secret's longest form) is dropped too, since a
 * secret may straddle that first cut. Never throws.
 */
export const scrub = (
  text: string,
  secrets: Iterable<Redacted.Redacted<string> | string>,
  options?: ScrubOptions
): string => scrubber(secrets, options)(text)

/** {@link scrub} for many texts and the same secrets: the secrets are prepared once. */
export const scrubber = (
  secrets: Iterable<Redacted.Redacted<string> | string>,
  options?: ScrubOptions
): (text: string) => string => capped(secrets, options?.byShape !== false)

/**
 * Replaces every occurrence of each secret in every form above, however long the text: for values
 * that are not cut (a person's items). The secrets are prepared once, for many texts.
 */
export const redactor = (secrets: Iterable<Redacted.Redacted<string> | string>): (text: string) => string => {
  const search: Search = { needles: valuesOf(secrets).flatMap(needlesOf), shapes: false }
  return (text) => redactAll(text, search)
}
