/**
 * A text read the ways a server may have escaped it: as written; JSON escapes alone, and
 * percent-encoding alone, decoded; then every kind decoded (see `escapes`), round after round,
 * until a round decodes nothing or {@link MAX_DECODINGS} rounds are done. A reading is a run of
 * units, each a character or an escape standing for one, with where it stands in the text; and,
 * for comparison, the units folded (full case folding, a space as `+`).
 *
 * Readings are made one after another and given back when read: their buffers are typed arrays
 * kept in a small pool, so that reading a short text allocates nothing, and a long one costs a few
 * bytes a character (a plain array of numbers cost 40 times that, and four times the time).
 */
import { type Codes, type Decoding, escapeAt } from "./escapes.js"

/** Most rounds of decoding a text is read through (an escape inside an escape inside an escape). */
export const MAX_DECODINGS = 4

const SPACE = 0x20
const PLUS = 0x2b
const HYPHEN = 0x2d
const DOTTED_CAPITAL_I = 0x130

/**
 * Units of a text with where each stands: `codes[i]` stands for `[starts[i], ends[i])` of the
 * text; the first `length` count. A character outside the BMP is two units, both standing for its
 * whole escape.
 */
export class Units implements Codes {
  codes: Uint16Array
  starts: Int32Array
  ends: Int32Array
  length = 0

  constructor(capacity: number) {
    this.codes = new Uint16Array(capacity)
    this.starts = new Int32Array(capacity)
    this.ends = new Int32Array(capacity)
  }

  /** Makes room for `capacity` units, keeping those there. */
  reserve(capacity: number): void {
    if (capacity <= this.codes.length) return
    const codes = new Uint16Array(capacity)
    const starts = new Int32Array(capacity)
    const ends = new Int32Array(capacity)
    codes.set(this.codes.subarray(0, this.length))
    starts.set(this.starts.subarray(0, this.length))
    ends.set(this.ends.subarray(0, this.length))
    this.codes = codes
    this.starts = starts
    this.ends = ends
  }

  push(code: number, start: number, end: number): void {
    if (this.length === this.codes.length) this.reserve(Math.max(16, this.length * 2))
    this.codes[this.length] = code
    this.starts[this.length] = start
    this.ends[this.length] = end
    this.length++
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
    // Stryker disable next-line EqualityOperator: equivalent, one more round adds an empty string
    for (let at = 0; at < this.length; at += 8192) {
      out += String.fromCharCode(...this.codes.subarray(at, Math.min(this.length, at + 8192)))
    }
    return out
  }

  /** A copy of the codes, which outlives the buffer. */
  copyCodes(): Array<number> {
    return Array.from(this.codes.subarray(0, this.length))
  }
}

/** Buffers kept for the next reading; a larger one is left to the garbage collector. */
const pool: Array<Units> = []
const POOLED = 16
const MAX_POOLED_CAPACITY = 1 << 18

/** Empty units with room for `capacity`, from the pool when it has some. */
const take = (capacity: number): Units => {
  const units = pool.pop()
  // Stryker disable next-line MethodExpression: equivalent, units made smaller grow as they are pushed
  if (units === undefined) return new Units(Math.max(16, capacity))
  units.length = 0
  units.reserve(capacity)
  return units
}

/** Gives units back to the pool: they must not be read again. */
const give = (units: Units): void => {
  if (pool.length < POOLED && units.codes.length <= MAX_POOLED_CAPACITY) pool.push(units)
}

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
export const fold = (unit: number): number | ReadonlyArray<number> => {
  if (unit === SPACE) return PLUS
  if (unit >= 0x41 && unit <= 0x5a) return unit + 0x20
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, the general path folds ASCII the same way (this is the fast path)
  if (unit < 0x80) return unit
  let folded = nonAsciiFolds.get(unit)
  // Stryker disable next-line ConditionalExpression: equivalent, a cache
  if (folded === undefined) {
    folded = foldNonAscii(unit)
    nonAsciiFolds.set(unit, folded)
  }
  return folded
}

/**
 * What a separated secret may be written without (folded): a hyphen, a space (folded to `+`), the
 * dashes of U+2010 to U+2015. `EW-2719-KQ` may come back as `EW2719KQ`, `EW 2719 KQ`, `EW–2719–KQ`.
 */
export const isSeparator = (folded: number): boolean =>
  folded === HYPHEN || folded === PLUS || (folded >= 0x2010 && folded <= 0x2015)

/** `units` folded, into units from the pool; without separators when `separatorless`. */
export const foldedOf = (units: Units, separatorless: boolean): Units => {
  const out = take(units.length)
  const { codes, ends, length, starts } = units
  for (let i = 0; i < length; i++) {
    const code = fold(codes[i]!)
    if (typeof code === "number") {
      if (!(separatorless && isSeparator(code))) out.push(code, starts[i]!, ends[i]!)
    } else {
      for (const part of code) {
        // Stryker disable next-line ConditionalExpression: equivalent, no character folds to several units one of which is a separator (checked over the BMP)
        if (!(separatorless && isSeparator(part))) out.push(part, starts[i]!, ends[i]!)
      }
    }
  }
  return out
}

/** `text` as written, into units from the pool: one unit per UTF-16 unit. */
const asWritten = (text: string): Units => {
  const units = take(text.length)
  for (let at = 0; at < text.length; at++) units.push(text.charCodeAt(at), at, at + 1)
  return units
}

/**
 * `units` with the escapes of the kinds asked for decoded, each read from the units as they are
 * (an escape made by decoding is decoded in the next round), or undefined when there was none.
 */
const decoded = (units: Units, decoding: Decoding): Units | undefined => {
  const { codes, ends, length, starts } = units
  const out = take(length)
  let found = false
  let at = 0
  while (at < length) {
    const escape = escapeAt(units, at, decoding)
    if (escape === undefined) {
      out.push(codes[at]!, starts[at]!, ends[at]!)
      at++
      continue
    }
    const [codePoint, taken] = escape
    out.pushCodePoint(codePoint, starts[at]!, ends[at + taken - 1]!)
    found = true
    at += taken
  }
  if (found) return out
  give(out)
  return undefined
}

const JSON_ONLY: Decoding = { json: true, percent: false, entities: false }
const PERCENT_ONLY: Decoding = { json: false, percent: true, entities: false }
const EVERY_KIND: Decoding = { json: true, percent: true, entities: true }

/**
 * Calls `read` with each reading of `text` in turn, the one as written first; a reading is given
 * back once read. The kinds of decoding alone are read only when the text holds both (a secret may
 * hold what looks like the other kind); with one kind, the rounds read it the same.
 */
export const forEachReading = (text: string, read: (units: Units, asWritten: boolean) => void): void => {
  const written = asWritten(text)
  read(written, true)
  // Stryker disable next-line StringLiteral: equivalent, a reading with nothing to decode is not made (this saves the decoding)
  const kinds = (text.includes("\\") ? 1 : 0) + (text.includes("%") ? 1 : 0) + (text.includes("&") ? 1 : 0)
  // Stryker disable next-line ConditionalExpression: equivalent, a text with one kind of escape reads the same through the rounds below
  if (kinds > 1) {
    for (const decoding of [JSON_ONLY, PERCENT_ONLY]) {
      const reading = decoded(written, decoding)
      if (reading !== undefined) {
        read(reading, false)
        give(reading)
      }
    }
  }
  let current = written
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, a text with none of the three decodes nothing in a round (this saves the round)
  for (let round = 0; round < MAX_DECODINGS && kinds > 0; round++) {
    const next = decoded(current, EVERY_KIND)
    if (next === undefined) break
    read(next, false)
    if (current !== written) give(current)
    current = next
  }
  if (current !== written) give(current)
  give(written)
}

/** Gives back units that {@link foldedOf} made. */
export const release = (units: Units): void => give(units)
