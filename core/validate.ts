/**
 * Checks on values that reach a header, a URL or a request body, alike in every Effect line. Each
 * returns a {@link Checked}: the clean value, or a reason written to be shown to a user. A reason
 * never contains the value itself, since the values checked here are secrets (ApplicationId),
 * patient identifiers (PersonUid) or settings.
 */

/** A value accepted (clean), or refused with a reason for the user. */
export type Checked<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly reason: string }

export const accept = <A>(value: A): Checked<A> => ({ ok: true, value })
export const refuse = (reason: string): Checked<never> => ({ ok: false, reason })

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/** True for a GUID in its 36-character hyphenated form, in any letter case. */
export const isGuid = (value: string): boolean => GUID.test(value)

/** Visible ASCII only: no control characters (CR/LF included), no spaces, nothing non-ASCII. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/** Longest PersonUid accepted; the real ones are far shorter (base64 of an encrypted id). */
export const MAX_PERSON_UID_LENGTH = 2048

/**
 * Longest token accepted from the server; the real ones are about 112 characters. It is a secret
 * scrubbed from every error text, so it stays within what the scrubber can search for.
 */
export const MAX_TOKEN_LENGTH = 4096

/** A GUID in its 36-character hyphenated form; braces around it (as .NET's `B` format writes it) are dropped. */
export const guid = (value: unknown): Checked<string> => {
  if (typeof value !== "string") return refuse("must be a string")
  const trimmed = value.trim()
  const bare = trimmed.startsWith("{") && trimmed.endsWith("}") ? trimmed.slice(1, -1).trim() : trimmed
  return isGuid(bare)
    ? accept(bare)
    : refuse("must be a GUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, hexadecimal digits)")
}

/** A whole number from `min` to `max`, given as a number or as its digits in text. */
export const integer = (min: number, max: number) => (value: unknown): Checked<number> => {
  const number = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value
  return typeof number === "number" && Number.isInteger(number) && number >= min && number <= max
    ? accept(number)
    : refuse(`must be a whole number from ${min} to ${max}`)
}

/** Whether `value` is a whole number from 1 to `max`, as a number (an option in code: no text read as one). */
export const positiveInteger = (value: unknown, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= max

/** A share above 0 and at most 1, given as a number or as decimal text (`0.5`, `.25`, `1`). */
export const share = (value: unknown): Checked<number> => {
  const number = typeof value === "string" && /^\s*(?:\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : value
  return typeof number === "number" && number > 0 && number <= 1
    ? accept(number)
    : refuse("must be a number above 0 and at most 1")
}

/** `true` or `false`, given as a boolean or as text (`true`/`false`, `yes`/`no`, `1`/`0`, any case). */
export const boolean = (value: unknown): Checked<boolean> => {
  if (typeof value === "boolean") return accept(value)
  const text = typeof value === "string" ? value.trim().toLowerCase() : undefined
  if (text === "true" || text === "yes" || text === "1") return accept(true)
  if (text === "false" || text === "no" || text === "0") return accept(false)
  return refuse("must be true or false")
}

/** A non-empty string of visible ASCII characters, at most `maxLength` long. */
export const visibleAscii = (value: unknown, maxLength: number): Checked<string> => {
  if (typeof value !== "string") return refuse("must be a string")
  if (value.length === 0 || value.trim().length === 0) return refuse("is empty")
  if (value.length > maxLength) return refuse(`is longer than ${maxLength} characters`)
  return VISIBLE_ASCII.test(value)
    ? accept(value)
    : refuse("contains characters that are not visible ASCII (control characters, spaces or non-ASCII)")
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const US_DATE = /^(\d{2})\/(\d{2})\/(\d{4})$/

/** `n` written with at least `width` digits. */
export const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/** A day of the calendar (proleptic Gregorian, years 1 to 9999). */
export interface Day {
  readonly year: number
  readonly month: number
  readonly day: number
}

const isRealDay = ({ day, month, year }: Day): boolean => {
  const probe = new Date(0)
  probe.setUTCFullYear(year, month - 1, day)
  return year >= 1 && probe.getUTCFullYear() === year && probe.getUTCMonth() === month - 1 && probe.getUTCDate() === day
}

/**
 * A day given as a `Date` (its UTC calendar day), `YYYY-MM-DD`, or also `MM/DD/YYYY` when
 * `allowUs` (the service's own sample form). It must name a real day.
 */
export const day = (value: unknown, allowUs: boolean): Checked<Day> => {
  const expected = allowUs ? "a YYYY-MM-DD or MM/DD/YYYY string or a Date" : "a YYYY-MM-DD string or a Date"
  if (value instanceof Date) {
    const year = value.getUTCFullYear()
    if (Number.isNaN(value.getTime()) || year < 1 || year > 9999) return refuse("is an invalid Date")
    return accept({ year, month: value.getUTCMonth() + 1, day: value.getUTCDate() })
  }
  if (typeof value !== "string") return refuse(`must be ${expected}`)
  const iso = ISO_DATE.exec(value)
  const us = allowUs ? US_DATE.exec(value) : null
  const found: Day | undefined = iso !== null
    ? { year: Number(iso[1]), month: Number(iso[2]), day: Number(iso[3]) }
    : us !== null
    ? { year: Number(us[3]), month: Number(us[1]), day: Number(us[2]) }
    : undefined
  if (found === undefined) return refuse(`must be written as ${expected.replace(" or a Date", "")}`)
  return isRealDay(found) ? accept(found) : refuse("is not a real calendar date")
}

/** A day written `YYYY-MM-DD`. */
export const isoDay = ({ day, month, year }: Day): string => `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`

/**
 * A calendar date, written `YYYY-MM-DD`. A string must already be in that form and name a real day;
 * a `Date` gives its UTC calendar day (the service ignores any time part).
 */
export const calendarDate = (value: unknown): Checked<string> => {
  const checked = day(value, false)
  return checked.ok ? accept(isoDay(checked.value)) : checked
}

/** A pattern for writing a day: `MM`, `DD` and `YYYY` once each, joined by one of `/`, `-`, `.`. */
const DAY_FORMAT = /^(MM|DD|YYYY)([/.-])(MM|DD|YYYY)\2(MM|DD|YYYY)$/

/** A day format such as `MM/DD/YYYY`. */
export const dayFormat = (value: unknown): Checked<string> => {
  const match = typeof value === "string" ? DAY_FORMAT.exec(value) : null
  return match !== null && new Set([match[1], match[3], match[4]]).size === 3
    ? accept(value as string)
    : refuse("must be MM, DD and YYYY once each, joined by '/', '-' or '.', e.g. MM/DD/YYYY")
}

/** Writes a day in a format accepted by {@link dayFormat}. */
export const formatDay = ({ day, month, year }: Day, format: string): string =>
  format.replace("YYYY", pad(year, 4)).replace("MM", pad(month, 2)).replace("DD", pad(day, 2))

/** Longest pass code accepted. */
export const MAX_PASS_CODE_LENGTH = 256

/**
 * Control characters, DEL, C1 controls, line and paragraph separators, and invisible format
 * characters (zero-width spaces, direction marks and overrides, the BOM: Unicode's Cf): not
 * printable. A pass code pasted with a zero-width space would be refused by the service anyway.
 */
const NOT_PRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\p{Cf}]/u

/** A non-empty string of printable characters (spaces and non-ASCII allowed), at most `maxLength` long. */
export const printable = (value: unknown, maxLength: number): Checked<string> => {
  if (typeof value !== "string") return refuse("must be a string")
  if (value.trim().length === 0) return refuse("is empty")
  if (value.length > maxLength) return refuse(`is longer than ${maxLength} characters`)
  return NOT_PRINTABLE.test(value)
    ? refuse("contains characters that are not printable (control characters, line breaks or invisible ones)")
    : accept(value)
}

const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/

/** Loopback hosts, where plain `http:` is allowed (tests, a local mock server). */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "localhost" || hostname === "[::1]" || LOOPBACK_V4.test(hostname)

/**
 * An absolute base URL with no query, fragment or credentials, `https:` unless the host is loopback.
 * Returned without a trailing slash so that `base + "/api/..."` joins under any path prefix.
 */
export const baseUrl = (value: unknown): Checked<string> => {
  const text = value instanceof URL ? value.href : value
  if (typeof text !== "string" || text.trim().length === 0) return refuse("must be an absolute URL")
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    return refuse("must be an absolute URL (e.g. https://openapi.intelichart.com)")
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse("must use https:")
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    return refuse("must use https: (plain http: is allowed only for localhost, 127.0.0.0/8 and ::1)")
  }
  if (url.username !== "" || url.password !== "") return refuse("must not contain credentials")
  if (url.search !== "" || url.hash !== "" || text.includes("?") || text.includes("#")) {
    return refuse("must not contain a query or a fragment")
  }
  return accept(`${url.origin}${url.pathname.replace(/\/+$/, "")}`)
}

/** A path that starts with `/`, with visible ASCII only and no query or fragment. */
export const urlPath = (value: unknown): Checked<string> => {
  if (typeof value !== "string" || !value.startsWith("/")) return refuse("must start with /")
  if (!VISIBLE_ASCII.test(value) || value.includes("?") || value.includes("#")) {
    return refuse("must be a plain path (visible ASCII, no query or fragment)")
  }
  return accept(value)
}
