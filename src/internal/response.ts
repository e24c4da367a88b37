/**
 * Turning an HTTP response into a JSON value or a typed error: the one place where statuses, the
 * service's envelope (`Success`, `ErrorType`, `ErrorMessage`) and `Retry-After` are read.
 */
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import type * as Redacted from "effect/Redacted"
import {
  ApiError,
  BadRequest,
  type HttpError,
  type Operation,
  RateLimited,
  ResponseDecodeError,
  ServerError,
  TokenExpired,
  Unauthorized,
  UnexpectedStatus
} from "../ClinicalError.js"
import * as HttpDate from "../HttpDate.js"
import type { TransportResponse } from "../HttpTransport.js"
import { scrub } from "./redaction.js"

/** The statuses that mean "this token is no good": refresh once and retry once. */
export const isTokenRejected = (status: number): boolean => status === 401 || status === 419

/** A property by name, exact first, then case-insensitively (the service writes PascalCase). */
export const field = (record: { readonly [key: string]: unknown }, name: string): unknown => {
  if (name in record) return record[name]
  const wanted = name.toLowerCase()
  for (const key in record) {
    if (key.toLowerCase() === wanted) return record[key]
  }
  return undefined
}

/** A plain JSON object (not null, not an array). */
export const isRecord = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** `Retry-After` as milliseconds from `now`: delta-seconds or an HTTP date; `undefined` when absent or bad. */
export const retryAfterMillis = (value: string | undefined, now: number): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000
  return Option.getOrUndefined(Option.map(HttpDate.parseMillis(text, { now }), (at) => Math.max(0, at - now)))
}

const statusError = (operation: Operation, response: TransportResponse, now: number): HttpError => {
  const status = response.status
  switch (status) {
    case 400:
      return new BadRequest({ operation, status })
    case 401:
      return new Unauthorized({ operation, status })
    case 419:
      return new TokenExpired({ operation, status })
    case 429: {
      const retryAfter = retryAfterMillis(response.headers["retry-after"], now)
      return new RateLimited({
        operation,
        status,
        ...(retryAfter === undefined ? {} : { retryAfterMillis: retryAfter })
      })
    }
  }
  if (status >= 500 && status <= 599) {
    const retryAfter = retryAfterMillis(response.headers["retry-after"], now)
    return new ServerError({ operation, status, ...(retryAfter === undefined ? {} : { retryAfterMillis: retryAfter }) })
  }
  return new UnexpectedStatus({ operation, status })
}

const parseJson = (body: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(body))
  } catch {
    return Option.none()
  }
}

const serverText = (value: unknown, secrets: Iterable<Redacted.Redacted<string>>): string | null =>
  value === null || value === undefined
    ? null
    : scrub(typeof value === "string" ? value : JSON.stringify(value), secrets)

/** What the caller knows about the exchange being read. */
export interface Exchange {
  readonly operation: Operation
  /** Secrets the request carried; scrubbed out of any server text kept in an error. Asked for only then. */
  readonly secrets: () => Iterable<Redacted.Redacted<string>>
  /** Local time (epoch ms) the response arrived, for an HTTP-date `Retry-After`. */
  readonly now: number
}

/**
 * The JSON body of a successful response, or the typed error the response stands for:
 * 401 and 419 by status; then the envelope's `Success: false` (`ApiError`), whatever the status;
 * then any other non-2xx by status; then a 2xx body that is not JSON.
 */
export const readJson = (exchange: Exchange, response: TransportResponse): Either.Either<unknown, HttpError> => {
  const { operation, now } = exchange
  if (isTokenRejected(response.status)) return Either.left(statusError(operation, response, now))
  const json = parseJson(response.body)
  if (Option.isSome(json) && isRecord(json.value) && field(json.value, "Success") === false) {
    return Either.left(
      new ApiError({
        operation,
        status: response.status,
        errorType: serverText(field(json.value, "ErrorType"), exchange.secrets()),
        errorMessage: serverText(field(json.value, "ErrorMessage"), exchange.secrets())
      })
    )
  }
  if (response.status < 200 || response.status > 299) return Either.left(statusError(operation, response, now))
  if (Option.isNone(json)) {
    return Either.left(new ResponseDecodeError({ operation, status: response.status, reason: "the body is not JSON" }))
  }
  return Either.right(json.value)
}

const ISSUE_WORDS: Record<ParseResult.ArrayFormatterIssue["_tag"], string> = {
  Missing: "is missing",
  Unexpected: "is not expected",
  Type: "has the wrong type",
  Refinement: "has a value that is not allowed",
  Transformation: "could not be transformed",
  Forbidden: "could not be decoded synchronously",
  Pointer: "is invalid",
  Composite: "is invalid"
}

/**
 * Describes a Schema decode failure by where and how it failed, never by the value found (values
 * here are tokens or patient data). At most five issues are listed.
 */
export const describeParseError = (error: ParseResult.ParseError, root: string): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const listed = issues.slice(0, 5).map((issue) => {
    const path = issue.path.map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("")
    return `${root}${path} ${ISSUE_WORDS[issue._tag]}`
  })
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : ""
  return `${listed.join("; ")}${more}`
}
