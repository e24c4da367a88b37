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
 *   without its separators too (`EW2719KQ` or `EW 2719 KQ` for `EW-2719-KQ`);
 * - a secret encoded alone in base64 or base64url, padded or not.
 *
 * How: the text is read into units several ways (`readings`: as written; JSON escapes decoded;
 * percent-encoding decoded; then every kind decoded, again and again until a reading decodes
 * nothing), a unit being a character or one escape standing for one, with where it stands in the
 * text, folded for comparison (full case folding, a space as `+`); each secret is read and folded
 * the same ways, and each of its readings is looked for in each of the text's with
 * Knuth-Morris-Pratt. Every
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
import { isGuid } from "../validate.js"
import { hexDigit } from "./escapes.js"
import { fold, foldedOf, forEachReading, isSeparator, release, type Units } from "./readings.js"
import { shapesIn } from "./secretShapes.js"

export { MAX_DECODINGS } from "./readings.js"

/** Longest piece of foreign text kept in an error. */
export const MAX_TEXT = 500

/** What stands in the place of a secret. */
export const REPLACEMENT = "<redacted>"

/** Most foreign text searched for secrets: a longer text is cut first, so the cost stays bounded. */
export const MAX_SEARCHED = 64 * 1024

/** Longest secret searched for; a text that would need a longer one is withheld whole. */
export const MAX_SECRET = 4096

/** Shortest base64 of a secret looked for: 8 characters, the encoding of 6 bytes. */
const MIN_ENCODED = 8

/** What an error holds in place of text that could not be checked. */
const WITHHELD = "<withheld: the text could not be checked for secrets>"

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
  /** Looked for among the units without separators (a GUID's digits, a pass code written without its hyphens). */
  readonly separatorless: boolean
  readonly anchor?: Anchor | undefined
}

const needleOf = (codes: ReadonlyArray<number>, separatorless: boolean, anchor?: Anchor): Needle => {
  // fallback[i]: the length of the longest proper prefix of codes[0..i] that is also its suffix.
  const fallback = [0]
  for (let i = 1, k = 0; i < codes.length; i++) {
    while (k > 0 && codes[i] !== codes[k]) k = fallback[k - 1]!
    if (codes[i] === codes[k]) k++
    fallback.push(k)
  }
  return { codes, fallback, separatorless, anchor }
}

const HEX_32 = /^[0-9a-f]{32}$/i

/** The 32 digits of a secret that is a GUID (hyphens or not, braces or not), or undefined. */
const guidDigits = (secret: string): string | undefined => {
  const bare = secret.startsWith("{") && secret.endsWith("}") ? secret.slice(1, -1) : secret
  return isGuid(bare) ? bare.replace(/-/g, "") : HEX_32.test(bare) ? bare : undefined
}

/** The folded codes of each reading of `text`. */
const foldedReadings = (text: string, separatorless: boolean): Array<Array<number>> => {
  const readings: Array<Array<number>> = []
  forEachReading(text, (units) => {
    const folded = foldedOf(units, separatorless)
    readings.push(folded.copyCodes())
    release(folded)
  })
  return readings
}

/**
 * What a secret is looked for as: a GUID by its digits (among units without separators); any other
 * secret in each of its readings (a PersonUid holding `%2B` may be echoed decoded, as `+`), without
 * its separators too (a service may normalise `EW-2719-KQ` to `EW2719KQ`), with what is left of it
 * when an escape of the text takes its first or last characters, and as its base64 and base64url
 * (a secret encoded alone; base64 inside a longer encoding has other digits, and is redacted by
 * shape).
 */
const needlesOf = (secret: string): Array<Needle> => {
  const digits = guidDigits(secret)
  if (digits !== undefined) return [needleOf(foldedReadings(digits, false)[0]!, true)]
  const needles: Array<Needle> = []
  const seen = new Set<string>()
  const add = (needle: Needle) => {
    const key = `${needle.separatorless}:${needle.anchor?.side}:${needle.anchor?.eaten.join(",")}:${
      needle.codes.join(",")
    }`
    if (needle.codes.length === 0 || seen.has(key)) return
    seen.add(key)
    needles.push(needle)
  }
  const readings = foldedReadings(secret, false)
  for (const codes of readings) {
    add(needleOf(codes, false))
    for (const anchored of anchoredNeedles(codes)) add(anchored)
  }
  if (readings.some((codes) => codes.some(isSeparator))) {
    for (const codes of foldedReadings(secret, true)) add(needleOf(codes, true))
  }
  const bytes = Buffer.from(secret, "utf8")
  // base64url has no padding: looked for that way, the padded form is found too, and its padding
  // with it. Not for a secret of a few bytes, whose encoding is too short to tell from any text.
  for (const encoded of [bytes.toString("base64"), bytes.toString("base64url")]) {
    if (encoded.length >= MIN_ENCODED) add(needleOf(foldedReadings(encoded, false)[0]!, false))
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
const mark = (reach: Int32Array, start: number, end: number): void => {
  if (end > reach[start]!) reach[start] = end
}

/**
 * Marks an occurrence of `needle` among the units `first` to `last`: as it is, or, for an anchored
 * needle, only with the escape it is anchored to (whose written form holds what it took of the
 * secret), which is then replaced with it.
 */
const found = (units: Units, needle: Needle, first: number, last: number, text: string, reach: Int32Array) => {
  const { anchor } = needle
  if (anchor === undefined) return mark(reach, units.starts[first]!, units.ends[last]!)
  const at = anchor.side === "start" ? first - 1 : last + 1
  // Stryker disable next-line ConditionalExpression: equivalent, past the units there is no escape that holds anything
  if (at < 0 || at >= units.length) return
  const start = units.starts[at]!
  const end = units.ends[at]!
  if (end - start < 2) return
  const taken = anchor.side === "start"
    ? holdsAt(text, end - anchor.eaten.length, anchor.eaten)
    : holdsAt(text, start, anchor.eaten)
  if (!taken) return
  if (anchor.side === "start") mark(reach, start, units.ends[last]!)
  else mark(reach, units.starts[first]!, end)
}

/**
 * Records where `needle` occurs among `units` (a reading of `text`), overlaps included; when the
 * text was cut short (`cut`), also a secret the cut leaves begun: what of it is there, to the end.
 */
const occurrences = (units: Units, needle: Needle, reach: Int32Array, text: string, cut: boolean): void => {
  const { codes, fallback } = needle
  const read = units.codes
  const length = units.length
  let k = 0
  for (let i = 0; i < length; i++) {
    while (k > 0 && read[i] !== codes[k]) k = fallback[k - 1]!
    if (read[i] === codes[k]) k++
    if (k === codes.length) {
      found(units, needle, i - k + 1, i, text, reach)
      k = fallback[k - 1]!
    }
  }
  if (cut && k > 0 && needle.anchor === undefined) mark(reach, units.starts[length - k]!, text.length)
}

/**
 * `text` with every occurrence recorded in `reach` replaced: occurrences that overlap or touch are
 * replaced together, once, so that a text made of a secret shrinks rather than grows tenfold.
 * One pass, in the order of the text.
 */
const replaceSpans = (text: string, reach: Int32Array): string => {
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
  const reach = new Int32Array(text.length)
  find(text, (start, end) => mark(reach, start, end))
  return replaceSpans(text, reach)
}

/** What a scrubber looks for: the known secrets, and (in server text) what has the shape of one. */
interface Search {
  readonly needles: ReadonlyArray<Needle>
  readonly shapes: boolean
}

/**
 * `text` with every occurrence of each needle, in every form, replaced (and every shape, when
 * asked): no length cap. `cut`: the text was cut from a longer one, and a secret it ends in the
 * middle of goes too.
 */
const redactAll = (text: string, { needles, shapes }: Search, cut: boolean): string => {
  // Every unit stands for at least one character: a text shorter than every needle holds none.
  let shortest = Infinity
  for (const needle of needles) shortest = Math.min(shortest, needle.codes.length)
  // Stryker disable next-line ConditionalExpression: equivalent, a text too short for any needle has none found in it (this is the fast path)
  if (!shapes && !cut && text.length < shortest) return text
  const separatorless = needles.some((needle) => needle.separatorless)
  const reach = new Int32Array(text.length)
  forEachReading(text, (units, asWritten) => {
    if (needles.length > 0) {
      const folded = foldedOf(units, false)
      const withoutSeparators = separatorless ? foldedOf(units, true) : folded
      for (const needle of needles) {
        occurrences(needle.separatorless ? withoutSeparators : folded, needle, reach, text, cut)
      }
      if (withoutSeparators !== folded) release(withoutSeparators)
      release(folded)
    }
    if (shapes) {
      // The reading as written is the text itself: not built again.
      shapesIn(
        asWritten ? text : units.text(),
        (start, end) => mark(reach, units.starts[start]!, units.ends[end - 1]!)
      )
    }
  })
  return replaceSpans(text, reach)
}

/** The secrets' values, revealed by the caller (each Effect line reveals its own `Redacted`); `undefined` for one that could not be. */
export type Secrets = Iterable<string | undefined>

/** The secrets that are not empty. */
const valuesOf = (secrets: Secrets): Array<string> => {
  const values: Array<string> = []
  for (const value of secrets) {
    if (value !== undefined && value.length > 0) values.push(value)
  }
  return values
}

/**
 * Scrubs a text, searched at most `limit` characters far (a longer text is cut there, and what
 * of a secret the cut leaves goes too), and capped at {@link MAX_TEXT}.
 */
export type Scrubber = (text: string, limit?: number) => string

/** A scrubber over prepared secrets: searched, cut and capped as {@link scrub} says. */
const capped = (secrets: Secrets, shapes: boolean): Scrubber => {
  const values = valuesOf(secrets)
  if (values.some((value) => value.length > MAX_SECRET)) return () => WITHHELD
  const search: Search = { needles: values.flatMap(needlesOf), shapes }
  return (text, limit = MAX_SEARCHED) => {
    const cut = text.length > limit
    const out = redactAll(cut ? text.slice(0, limit) : text, search, cut)
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
 * far, and what of a secret it ends in the middle of goes too. Never throws.
 */
export const scrub = (
  text: string,
  secrets: Secrets,
  options?: ScrubOptions
): string => scrubber(secrets, options)(text)

/** {@link scrub} for many texts and the same secrets: the secrets are prepared once. */
export const scrubber = (
  secrets: Secrets,
  options?: ScrubOptions
): Scrubber => capped(secrets, options?.byShape !== false)

/**
 * Replaces every occurrence of each secret in every form above, however long the text: for values
 * that are not cut (a person's items). The secrets are prepared once, for many texts.
 */
export const redactor = (secrets: Secrets): (text: string) => string => {
  const search: Search = { needles: valuesOf(secrets).flatMap(needlesOf), shapes: false }
  return (text) => redactAll(text, search, false)
}
