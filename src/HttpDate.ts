/**
 * HTTP dates (RFC 9110 section 5.6.7): parse all three forms, format the preferred one. The rules
 * are core/httpDate.ts's; this module gives them as `Option`.
 *
 * `Date.parse` is not used: it reads the asctime form as local time and accepts many strings that
 * are not HTTP dates at all. Every form here is GMT.
 */
import * as Option from "effect/Option"
import * as Core from "../core/httpDate.js"

export { format, type ParseOptions } from "../core/httpDate.js"

/**
 * Parses an HTTP date in any of its three forms. Leading and trailing whitespace is ignored (as an
 * HTTP header parser would); anything else that is not exactly one of the forms is `None`.
 */
export const parse = (input: string, options?: Core.ParseOptions): Option.Option<Date> =>
  Option.fromNullable(Core.parse(input, options))

/** Parses an HTTP date to epoch milliseconds. */
export const parseMillis = (input: string, options?: Core.ParseOptions): Option.Option<number> =>
  Option.fromNullable(Core.parseMillis(input, options))
