/**
 * A parsed JSON value with secrets taken out of every string in it, keys included: what a server
 * echoed of a request (its PersonUid, token, ApplicationId) inside its answer. A value with nothing
 * to take out is returned as it is, uncopied.
 */
import { isRecord } from "../json.js"

/** `value` with `redact` applied to every string in it, keys included; copied only where something changed. */
export const redactJson = (value: unknown, redact: (text: string) => string): unknown => {
  if (typeof value === "string") return redact(value)
  if (Array.isArray(value)) {
    let changed = false
    const out = value.map((element) => {
      const clean = redactJson(element, redact)
      if (clean !== element) changed = true
      return clean
    })
    return changed ? out : value
  }
  if (!isRecord(value)) return value
  let changed = false
  const entries = Object.entries(value).map(([key, inner]) => {
    const cleanKey = redact(key)
    const clean = redactJson(inner, redact)
    if (cleanKey !== key || clean !== inner) changed = true
    return [cleanKey, clean] as const
  })
  return changed ? Object.fromEntries(entries) : value
}
