/**
 * HTTP dates (RFC 9110 section 5.6.7): parse all three forms, format the preferred one. The rules
 * are core/httpDate.ts's; this module gives them as `Option`, as the Effect 3 line's does.
 */
import * as Option from "effect/Option"
import * as Core from "../../core/httpDate.js"

export { format, type ParseOptions } from "../../core/httpDate.js"

/** Parses an HTTP date in any of its three forms (surrounding whitespace ignored); anything else is `None`. */
export const parse = (input: string, options?: Core.ParseOptions): Option.Option<Date> =>
  Option.fromNullishOr(Core.parse(input, options))

/** Parses an HTTP date to epoch milliseconds. */
export const parseMillis = (input: string, options?: Core.ParseOptions): Option.Option<number> =>
  Option.fromNullishOr(Core.parseMillis(input, options))
