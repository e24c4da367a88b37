/**
 * Last line of defence for text we do not write ourselves (server error messages, network error
 * details): every known secret in it is replaced before the text may enter an error.
 */
import * as Redacted from "effect/Redacted"

/** Longest piece of foreign text kept in an error. */
const MAX_TEXT = 500

/** Replaces every occurrence of each secret with `<redacted>` and caps the length. */
export const scrub = (text: string, secrets: Iterable<Redacted.Redacted<string> | string>): string => {
  let out = text
  for (const secret of secrets) {
    const value = Redacted.isRedacted(secret) ? Redacted.value(secret) : secret
    if (typeof value === "string" && value.length > 0) out = out.split(value).join("<redacted>")
  }
  return out.length > MAX_TEXT ? `${out.slice(0, MAX_TEXT)}...` : out
}
