/**
 * A person's items with their own PersonUid taken out, before the command line prints or writes
 * them: the results name persons by position, and a service that echoes the PersonUid inside its
 * data must not put it back. Strings (keys included) are searched as parsed, in any letter case;
 * items without it are returned as they are, uncopied.
 */
import { isRecord } from "../internal/json.js"
import { redactEvery } from "../internal/redaction.js"

/** Deeper than the response reader allows (64 levels): anything that was parsed is covered. */
const MAX_DEPTH = 100

export const scrubItems = <A>(items: ReadonlyArray<A>, personUid: string): ReadonlyArray<A> => {
  const wanted = personUid.toLowerCase()
  if (wanted.length === 0) return items
  const text = (value: string) => (value.toLowerCase().includes(wanted) ? redactEvery(value, personUid) : value)
  const holds = (value: unknown, depth: number): boolean => {
    if (typeof value === "string") return value.toLowerCase().includes(wanted)
    if (depth > MAX_DEPTH || typeof value !== "object" || value === null) return false
    for (const key in value) {
      if (key.toLowerCase().includes(wanted) || holds((value as Record<string, unknown>)[key], depth + 1)) return true
    }
    return false
  }
  const clean = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") return text(value)
    if (depth > MAX_DEPTH || typeof value !== "object" || value === null) return value
    if (Array.isArray(value)) return value.map((element) => clean(element, depth + 1))
    if (!isRecord(value)) return value
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [text(key), clean(inner, depth + 1)]))
  }
  return items.some((item) => holds(item, 0)) ? items.map((item) => clean(item, 0) as A) : items
}
