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

/** Longest piece of foreign text kept in an error. */
export const MAX_TEXT = 500

const REPLACEMENT = "<redacted>"

const GUID = /^\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?$/i

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

const hex = (code: number, width: number): string => code.toString(16).padStart(width, "0")

/** Every way one character of a secret may be written in echoed text. */
const characterForms = (character: string): string => {
  const forms = [escapeRegExp(character)]
  // JSON: any character may be written \uXXXX (a surrogate pair for one outside the BMP).
  forms.push(character.split("").map((unit) => `\\\\u${hex(unit.charCodeAt(0), 4)}`).join(""))
  if (character === "/" || character === "\"" || character === "\\") forms.push(escapeRegExp(`\\${character}`))
  // URLs and form bodies: the UTF-8 bytes percent-encoded; a space as '+'.
  const bytes = [...Buffer.from(character, "utf8")].map((byte) => `%${hex(byte, 2)}`).join("")
  forms.push(bytes)
  if (character === " ") forms.push("\\+")
  return `(?:${forms.join("|")})`
}

/** A pattern that matches `secret` in every form above (the caller adds the `i` flag). */
const secretPattern = (secret: string): string => {
  if (GUID.test(secret)) {
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

/**
 * Replaces every occurrence of each secret, in every form it may be echoed in, with `<redacted>`,
 * then caps the length. The whole text is scrubbed before it is cut, so no piece of a secret
 * survives at the cut.
 */
export const scrub = (text: string, secrets: Iterable<Redacted.Redacted<string> | string>): string => {
  const patterns: Array<string> = []
  for (const secret of secrets) {
    const value = valueOf(secret)
    if (typeof value === "string" && value.length > 0) patterns.push(secretPattern(value))
  }
  // Longer patterns first, so that a secret containing another is replaced whole.
  patterns.sort((a, b) => b.length - a.length)
  const out = patterns.length === 0 ? text : text.replace(new RegExp(patterns.join("|"), "gi"), REPLACEMENT)
  return out.length > MAX_TEXT ? `${out.slice(0, MAX_TEXT)}...` : out
}
