/**
 * HTTP dates (RFC 9110 section 5.6.7): parse all three forms, format the preferred one.
 *
 * `Date.parse` is not used: it reads the asctime form as local time and accepts many strings that
 * are not HTTP dates at all. Every form here is GMT.
 */
import { pad } from "./validate.js"

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const

const day = "(Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
const longDay = "(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
const month = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
const time = "(\\d{2}):(\\d{2}):(\\d{2})"

// Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE = new RegExp(`^${day}, (\\d{2}) ${month} (\\d{4}) ${time} GMT$`)
// Sunday, 06-Nov-94 08:49:37 GMT
const RFC_850 = new RegExp(`^${longDay}, (\\d{2})-${month}-(\\d{2}) ${time} GMT$`)
// Sun Nov  6 08:49:37 1994
const ASCTIME = new RegExp(`^${day} ${month} ([ \\d]\\d) ${time} (\\d{4})$`)

const instant = (
  year: number,
  monthName: string,
  dayOfMonth: string,
  hour: string,
  minute: string,
  second: string
): Date | undefined => {
  const m = MONTHS.indexOf(monthName as (typeof MONTHS)[number])
  const d = Number(dayOfMonth.trim())
  const h = Number(hour)
  const min = Number(minute)
  const s = Number(second)
  // 60 is a leap second, which the grammar allows; Date.UTC rolls it into the next minute.
  if (m < 0 || h > 23 || min > 59 || s > 60 || d < 1) return undefined
  const daysInMonth = new Date(Date.UTC(year, m + 1, 0)).getUTCDate()
  if (d > daysInMonth) return undefined
  const date = new Date(0)
  date.setUTCFullYear(year, m, d)
  date.setUTCHours(h, min, s, 0)
  return Number.isNaN(date.getTime()) ? undefined : date
}

/** Options for {@link parse}. */
export interface ParseOptions {
  /**
   * The reference instant (epoch milliseconds) for the two-digit years of the RFC 850 form: a year
   * that would lie more than 50 years in the future is read as the most recent past year with the
   * same last two digits (RFC 9110). Defaults to the current time.
   */
  readonly now?: number | undefined
}

/**
 * Parses an HTTP date in any of its three forms. Leading and trailing whitespace is ignored (as an
 * HTTP header parser would); anything else that is not exactly one of the forms is `undefined`.
 */
export const parse = (input: string, options?: ParseOptions): Date | undefined => {
  if (typeof input !== "string" || input.length > 64) return undefined
  const text = input.trim()
  let match = IMF_FIXDATE.exec(text)
  if (match !== null) {
    return instant(Number(match[4]), match[3]!, match[2]!, match[5]!, match[6]!, match[7]!)
  }
  match = ASCTIME.exec(text)
  if (match !== null) {
    return instant(Number(match[7]), match[2]!, match[3]!, match[4]!, match[5]!, match[6]!)
  }
  match = RFC_850.exec(text)
  if (match !== null) {
    const currentYear = new Date(options?.now ?? Date.now()).getUTCFullYear()
    const year = currentYear - (currentYear % 100) + Number(match[4])
    return instant(year - currentYear > 50 ? year - 100 : year, match[3]!, match[2]!, match[5]!, match[6]!, match[7]!)
  }
  return undefined
}

/** Parses an HTTP date to epoch milliseconds. */
export const parseMillis = (input: string, options?: ParseOptions): number | undefined =>
  parse(input, options)?.getTime()

const pad2 = (n: number): string => pad(n, 2)

/**
 * Formats an instant as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form servers send.
 * Milliseconds are dropped. Throws a `RangeError` for an invalid `Date` or a year outside 0 to 9999,
 * which have no HTTP date.
 */
export const format = (input: Date | number): string => {
  if (typeof input !== "number" && !(input instanceof Date)) {
    throw new RangeError("HttpDate.format: the argument must be a Date or a number of milliseconds")
  }
  const date = typeof input === "number" ? new Date(input) : input
  const year = date.getUTCFullYear()
  if (Number.isNaN(date.getTime()) || year < 0 || year > 9999) {
    throw new RangeError("HttpDate.format: the instant has no HTTP date form")
  }
  return `${DAYS[date.getUTCDay()]}, ${pad2(date.getUTCDate())} ${MONTHS[date.getUTCMonth()]} ${
    String(year).padStart(4, "0")
  } ${pad2(date.getUTCHours())}:${pad2(date.getUTCMinutes())}:${pad2(date.getUTCSeconds())} GMT`
}
