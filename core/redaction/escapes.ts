/**
 * The escapes a server writes a character in, each read at one position of a text: JSON's (`\/`,
 * `\"`, `\\`, `\uXXXX`), percent-encoded UTF-8 (`%C3%A9`) and HTML or XML character references
 * (`&amp;`, `&#39;`, `&#x3D;`). Each reader gives the code point and how many units the escape
 * takes, or `undefined` when none starts there (then its first character is a character like any
 * other). Only well-formed escapes are read, by arithmetic: no exception is thrown per malformed
 * one (`decodeURIComponent`'s made a text of them take 15 times as long).
 */

/** Units to read escapes in: the first `length` of `codes` (a buffer may be longer). */
export interface Codes {
  readonly codes: ArrayLike<number>
  readonly length: number
}

/** An escape read: its code point, and how many units it takes. */
export type Escape = readonly [codePoint: number, length: number]

const PERCENT = 0x25
const BACKSLASH = 0x5c
const SLASH = 0x2f
const QUOTE = 0x22
const AMPERSAND = 0x26
const HASH = 0x23
const SEMICOLON = 0x3b

/** The unit at `at`, or -1 past the end. */
// Stryker disable next-line UnaryOperator: equivalent, no reader takes a unit of 1 for part of an escape either
const unitAt = ({ codes, length }: Codes, at: number): number => (at < length ? codes[at]! : -1)

/** The value of a hexadecimal digit, or -1. */
export const hexDigit = (unit: number): number =>
  // Stryker disable next-line ConditionalExpression: equivalent, a unit below "0" gives a negative digit, refused all the same
  unit >= 0x30 && unit <= 0x39
    ? unit - 0x30
    : unit >= 0x61 && unit <= 0x66
    ? unit - 0x57
    : unit >= 0x41 && unit <= 0x46
    ? unit - 0x37
    : -1

/** The value of `digits` hexadecimal digits at `at`, or -1. */
const hexAt = (text: Codes, at: number, digits: number): number => {
  let value = 0
  for (let i = 0; i < digits; i++) {
    const digit = hexDigit(unitAt(text, at + i))
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

/** The well-formed UTF-8 sequence percent-encoded at `at` (`%C3%A9`). */
export const percentEncoded = (text: Codes, at: number): Escape | undefined => {
  const lead = unitAt(text, at) === PERCENT ? hexAt(text, at + 1, 2) : -1
  if (lead < 0) return undefined
  const bytes = utf8Length(lead)
  if (bytes === 0) return undefined
  // The lead's own bits: 7 of a single byte, then 5, 4 or 3.
  let codePoint = bytes === 1 ? lead : lead & (0xff >> (bytes + 1))
  for (let i = 1; i < bytes; i++) {
    // Stryker disable next-line UnaryOperator: equivalent, 1 is below every continuation byte too
    const byte = unitAt(text, at + 3 * i) === PERCENT ? hexAt(text, at + 3 * i + 1, 2) : -1
    const [low, high] = i === 1 ? secondByteRange(lead) : [0x80, 0xbf]
    if (byte < low || byte > high) return undefined
    codePoint = (codePoint << 6) | (byte & 0x3f)
  }
  return [codePoint, 3 * bytes]
}

/** The JSON escape at `at` (`\/`, `\"`, `\\`, `\uXXXX`). */
export const jsonEscaped = (text: Codes, at: number): Escape | undefined => {
  if (unitAt(text, at) !== BACKSLASH) return undefined
  const next = unitAt(text, at + 1)
  if (next === SLASH || next === QUOTE || next === BACKSLASH) return [next, 2]
  const escaped = next === 0x75 || next === 0x55 ? hexAt(text, at + 2, 4) : -1
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

// Stryker disable next-line ConditionalExpression: equivalent, a unit below "0" gives a negative digit, refused all the same
const decimalDigit = (unit: number): number => (unit >= 0x30 && unit <= 0x39 ? unit - 0x30 : -1)

/** The HTML or XML character reference at `at` (`&amp;`, `&#39;`, `&#x3D;`). */
export const entityEscaped = (text: Codes, at: number): Escape | undefined => {
  if (unitAt(text, at) !== AMPERSAND) return undefined
  if (unitAt(text, at + 1) === HASH) {
    const x = unitAt(text, at + 2)
    const hex = x === 0x78 || x === 0x58
    let value = 0
    let end = at + (hex ? 3 : 2)
    const first = end
    for (; end - first < (hex ? 6 : 7); end++) {
      const digit = hex ? hexDigit(unitAt(text, end)) : decimalDigit(unitAt(text, end))
      if (digit < 0) break
      value = value * (hex ? 16 : 10) + digit
    }
    return end > first && unitAt(text, end) === SEMICOLON && value <= 0x10ffff ? [value, end + 1 - at] : undefined
  }
  // A name is looked up as it stands: what is no entity's (a digit, a second "&") is in none.
  let name = ""
  for (let end = at + 1; end <= at + 1 + LONGEST_ENTITY; end++) {
    const unit = unitAt(text, end)
    if (unit === SEMICOLON) {
      const value = ENTITIES.get(name)
      return value === undefined ? undefined : [value, end + 1 - at]
    }
    name += String.fromCharCode(unit)
  }
  return undefined
}

/** Which escapes a reading decodes. */
export interface Decoding {
  readonly json: boolean
  readonly percent: boolean
  readonly entities: boolean
}

/** The escape of the kinds asked for at `at`, if one starts there. */
export const escapeAt = (text: Codes, at: number, decoding: Decoding): Escape | undefined =>
  (decoding.json ? jsonEscaped(text, at) : undefined) ??
    (decoding.percent ? percentEncoded(text, at) : undefined) ??
    (decoding.entities ? entityEscaped(text, at) : undefined)
