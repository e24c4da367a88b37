/**
 * Last line of defence for text we do not write ourselves (server error messages, network error
 * details, a redirect's host): every known secret in it is replaced before the text may enter an
 * error. A server echoes a value in whatever form its framework writes it, so each secret is found
 * in every form it plausibly takes:
 * - in any letter case (.NET writes a Guid in lower case; a proxy may upper-case);
 * - JSON-escaped (`\/`, `\u002B`, `\"`), as a serializer that escapes more than it must writes it;
 * - percent-encoded (`%2F`, `%2b`), as it appears in a URL or a form body, `+` for a space;
 * - a GUID with or without its hyphens (`N` format) or braces (`B` format).
 */
import * as Redacted from "effect/Redacted"
import { isGuid } from "./validate.js"

/** Longest piece of foreign text kept in an error. */
export const MAX_TEXT = 500

/** What stands in the place of a secret. */
export const REPLACEMENT = "<redacted>"

/** `text` as a regular expression that matches it literally. */
export const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

const hex = (code: number, width: number): string => code.toString(16).padStart(width, "0")

/** Every way one character of a secret may be written in echoed text. */
const characterForms = (character: string): string => {
  const forms = [escapeRegExp(character)]
  // JSON: any character may be written \uXXXX (a surrogate pair for one outside the BMP).
  forms.push(character.split("").map((unit) => `\\\\u${hex(unit.charCodeAt(0), 4)}`).join(""))
  if (character === "/" || character === "\"" || character === "\\") forms.push(escapeRegExp(`\\${character}`))
  // URLs and form bodies: the UTF-8 bytes percent-encoded; a space as '+'.
  const bytes = [...Buffer.from(character)].map((byte) => `%${hex(byte, 2)}`).join("")
  forms.push(bytes)
  if (character === " ") forms.push("\\+")
  return `(?:${forms.join("|")})`
}

/** A pattern that matches `secret` in every form above (the caller adds the `i` flag). */
const secretPattern = (secret: string): string => {
  if (isGuid(secret)) {
    const digits = secret.replace(/[{}-]/g, "")
    const groups = [
      digits.slice(0, 8),
      digits.slice(8, 12),
      digits.slice(12, 16),
      digits.slice(16, 20),
      digits.slice(20)
    ]
    return groups.map((group) => [...group].map(characterForms).join("")).join(`${characterForms("-")}?`)
  }
  return Array.from(secret, characterForms).join("")
}

const valueOf = (secret: Redacted.Redacted<string> | string): unknown =>
  Redacted.isRedacted(secret) ? Redacted.value(secret) : secret

/** Most foreign text searched for secrets: a longer text is cut first, so the cost stays bounded. */
export const MAX_SEARCHED = 64 * 1024

/** Longest secret a pattern is built for; a text that would need a longer one is withheld whole. */
export const MAX_SECRET = 4096

/** Most characters one character of a secret takes once echoed (`%F0%9F%98%80`, `\ud83d\ude00`). */
const MAX_EXPANSION = 12

/** What an error holds in place of text that could not be checked. */
const WITHHELD = "<withheld: the text could not be checked for secrets>"

/**
 * Replaces every occurrence of each secret, in every form it may be echoed in, with `<redacted>`,
 * then caps the length at {@link MAX_TEXT}. The text is scrubbed before it is cut, so no piece of
 * a secret survives the cut. A text longer than {@link MAX_SEARCHED} is searched only that far,
 * and then its last stretch (as long as a secret's longest form) is dropped too, since a secret
 * may straddle that first cut. Never throws.
 */
export const scrub = (text: string, secrets: Iterable<Redacted.Redacted<string> | string>): string =>
  scrubber(secrets)(text)

/** {@link scrub} for many texts and the same secrets: the pattern is built once. */
export const scrubber = (secrets: Iterable<Redacted.Redacted<string> | string>): (text: string) => string => {
  const values: Array<string> = []
  for (const secret of secrets) {
    const value = valueOf(secret)
    if (typeof value === "string" && value.length > 0) values.push(value)
  }
  const longest = values.reduce((most, value) => Math.max(most, value.length), 0)
  if (longest > MAX_SECRET) return () => WITHHELD
  let pattern: RegExp | undefined
  if (values.length > 0) {
    // Longer patterns first, so that a secret containing another is replaced whole.
    const patterns = values.map(secretPattern).sort((a, b) => b.length - a.length)
    // Stryker disable BlockStatement,ArrowFunction: the catch is defensive and unreachable (every pattern is escaped); never throwing is the promise
    try {
      pattern = new RegExp(patterns.join("|"), "gi")
    } catch {
      return () => WITHHELD
    }
    // Stryker restore BlockStatement,ArrowFunction
  }
  return (text) => {
    // Stryker disable next-line EqualityOperator: at exactly the limit, what the tail cut drops is past the 500 characters kept
    const cut = text.length > MAX_SEARCHED
    // Stryker disable next-line MethodExpression: searching the whole text costs more, and changes nothing of the 500 characters kept
    let out = cut ? text.slice(0, MAX_SEARCHED) : text
    if (pattern !== undefined) {
      // Stryker disable BlockStatement: the catch is defensive and unreachable (replace with a valid pattern does not throw); never throwing is the promise
      try {
        out = out.replace(pattern, REPLACEMENT)
      } catch {
        return WITHHELD
      }
      // Stryker restore BlockStatement
    }
    if (cut) out = out.slice(0, Math.max(0, out.length - MAX_EXPANSION * longest))
    return out.length > MAX_TEXT || cut ? `${out.slice(0, MAX_TEXT)}...` : out
  }
}
