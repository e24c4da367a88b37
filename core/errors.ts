/**
 * Every failure of the client as plain data, and the message each one shows: what the core's
 * decisions read, and what each Effect line's error classes hold (they are checked to match, and
 * their `message` is this module's).
 *
 * Privacy rule: an error holds only what is safe to log (the operation, the HTTP status, the name of
 * a field, a reason written by us, and server text scrubbed of known secrets). It never holds a
 * token, an ApplicationId, a PersonUid, a request or a raw body.
 */

/**
 * The operation a failure belongs to: `token`, `authenticate`, or the name of a person-data
 * operation (`medications`, `ethnicities`, ..., or one the application defined).
 */
export type Operation = string

/**
 * Where a request went: its method and URL. Our URLs carry no patient data (the PersonUid travels
 * in the body), so they are safe to show; keep it so.
 */
export interface Target {
  readonly method?: string | undefined
  readonly url?: string | undefined
}

/** One refused setting: its name (an option's or a variable's) and why, never its value. */
export interface SettingRefusal {
  readonly setting: string
  readonly reason: string
}

export interface InvalidConfig {
  readonly _tag: "InvalidConfig"
  readonly setting: string
  readonly reason: string
  readonly others?: ReadonlyArray<SettingRefusal> | undefined
}

export interface InvalidRequest {
  readonly _tag: "InvalidRequest"
  readonly operation: Operation
  readonly field: string
  readonly reason: string
}

/** Why a request got no usable response (see each line's `TransportError`). */
export const TRANSPORT_FAILURES = [
  "Network",
  "Dns",
  "Tls",
  "Proxy",
  "Timeout",
  "Deadline",
  "ResponseTooLarge",
  "Redirected"
] as const

export type TransportFailure = typeof TRANSPORT_FAILURES[number]

export interface TransportError {
  readonly _tag: "TransportError"
  readonly operation?: Operation | undefined
  readonly reason: TransportFailure
  readonly method: string
  readonly url: string
  readonly detail: string
  readonly requestSent?: boolean | undefined
}

/**
 * A transport's failure as an operation's (each line makes its `TransportError` of these fields):
 * labelled with `operation`, its detail passed through `scrub` (the line's scrubber, with the
 * operation's secrets: the transport knows a request's secrets as whole values, not a pass code
 * inside a body).
 */
export const labelledFields = (
  error: Omit<TransportError, "_tag">,
  operation: Operation,
  scrub: (detail: string) => string
): Omit<TransportError, "_tag"> => ({
  operation,
  reason: error.reason,
  method: error.method,
  url: error.url,
  detail: scrub(error.detail),
  ...(error.requestSent === undefined ? {} : { requestSent: error.requestSent })
})

/** An HTTP status the service answered with, and where the request went. */
interface StatusFailure<Tag extends string> extends Target {
  readonly _tag: Tag
  readonly operation: Operation
  readonly status: number
}

export type Unauthorized = StatusFailure<"Unauthorized">
export type TokenExpired = StatusFailure<"TokenExpired">
export type BadRequest = StatusFailure<"BadRequest">

export interface RateLimited extends StatusFailure<"RateLimited"> {
  readonly retryAfterMillis?: number | undefined
}

export interface ServerError extends StatusFailure<"ServerError"> {
  readonly retryAfterMillis?: number | undefined
}

export interface UnexpectedStatus extends StatusFailure<"UnexpectedStatus"> {
  readonly location?: string | undefined
}

export interface ResponseDecodeError extends StatusFailure<"ResponseDecodeError"> {
  readonly reason: string
}

export interface ApiError extends StatusFailure<"ApiError"> {
  readonly errorType: string | null
  readonly errorMessage: string | null
}

export const TOKEN_STORE_FAILURES = ["Timeout", "Unavailable", "Unreadable"] as const

export interface TokenStoreError {
  readonly _tag: "TokenStoreError"
  readonly operation: Operation
  readonly reason: typeof TOKEN_STORE_FAILURES[number]
  readonly detail: string
}

export interface CircuitOpen {
  readonly _tag: "CircuitOpen"
  readonly operation: Operation
  readonly retryAfterMillis: number
}

export interface ClientClosed {
  readonly _tag: "ClientClosed"
  readonly operation: Operation
  readonly whileRunning: boolean
}

/** Every failure of a request. */
export type ClinicalError =
  | InvalidRequest
  | TransportError
  | Unauthorized
  | TokenExpired
  | BadRequest
  | RateLimited
  | ServerError
  | UnexpectedStatus
  | ResponseDecodeError
  | ApiError
  | TokenStoreError
  | CircuitOpen

/** What a failed HTTP exchange can end in (everything but `InvalidRequest`). */
export type HttpError = Exclude<ClinicalError, InvalidRequest>

/** Every error the library fails, throws or rejects with. */
export type AnyClinicalError = ClinicalError | InvalidConfig | ClientClosed

// ---------------------------------------------------------------------------------------------
// Messages: every class has an explicit one, because a default message prints every field.

/** `medications request POST https://host/path (HTTP 503)`: the operation, where it went, the status. */
const describeRequest = (error: Target & { readonly operation: Operation }, status: number | undefined): string => {
  const target = error.method !== undefined && error.url !== undefined ? ` ${error.method} ${error.url}` : ""
  return `${error.operation} request${target}${status === undefined ? "" : ` (HTTP ${status})`}`
}

/** What to check when a token was refused, by the token host (the ApplicationId) or a data host (a fresh token too). */
const tokenAdvice = (operation: Operation): string =>
  operation === "token"
    ? ": the token host refused the ApplicationId. Check the ApplicationId (applicationId, CLINICAL_APPLICATION_ID) " +
      "and that the token host (authUrl) and the data host (baseUrl) belong to the same environment, test or production"
    : ", with a fresh token too. Check that the token host (authUrl) and this host belong to the same environment, " +
      "test or production, and that the ApplicationId may use this operation"

/** `; retry after N ms`, when the server said when. */
const retryAfter = (millis: number | undefined): string => millis === undefined ? "" : `; retry after ${millis} ms`

/** The message of each failure, by its tag. */
export const messages: {
  readonly [Tag in AnyClinicalError["_tag"]]: (error: Extract<AnyClinicalError, { _tag: Tag }>) => string
} = {
  InvalidConfig: (error) => {
    if (error.others === undefined || error.others.length === 0) {
      return `invalid setting ${error.setting}: ${error.reason}`
    }
    const all = [{ setting: error.setting, reason: error.reason }, ...error.others]
    return `invalid settings: ${all.map(({ reason, setting }) => `${setting} ${reason}`).join("; ")}`
  },
  InvalidRequest: (error) => `${error.operation} request refused before sending: ${error.field} ${error.reason}`,
  TransportError: (error) => {
    const what = error.operation === undefined ? "request" : `${error.operation} request`
    return `${what} ${error.method} ${error.url} failed (${error.reason}): ${error.detail}`
  },
  Unauthorized: (error) =>
    `${describeRequest(error, error.status)} was refused as unauthorized${tokenAdvice(error.operation)}`,
  TokenExpired: (error) =>
    `${describeRequest(error, error.status)} was refused: the token exceeded its lifetime${
      error.operation === "token" ? "" : tokenAdvice(error.operation)
    }`,
  BadRequest: (error) =>
    `${describeRequest(error, error.status)} was refused as a bad request${
      error.operation === "token" ? tokenAdvice(error.operation) : ""
    }`,
  RateLimited: (error) =>
    `${describeRequest(error, error.status)} was rate limited${retryAfter(error.retryAfterMillis)}`,
  ServerError: (error) =>
    `${describeRequest(error, error.status)} failed with a server error${retryAfter(error.retryAfterMillis)}`,
  UnexpectedStatus: (error) => {
    const redirect = error.status < 300 || error.status > 399
      ? ""
      : `: a redirect${error.location === undefined ? "" : ` to ${error.location}`}, which the client never follows`
    return `${describeRequest(error, error.status)} got an unexpected status${redirect}`
  },
  ResponseDecodeError: (error) =>
    `${describeRequest(error, error.status)} returned a response that could not be decoded: ${error.reason}`,
  ApiError: (error) => {
    const type = error.errorType === null ? "" : ` ${error.errorType}`
    const text = error.errorMessage === null ? "" : `: ${error.errorMessage}`
    return `${describeRequest(error, error.status)} reported failure${type}${text}`
  },
  TokenStoreError: (error) => `${error.operation} store ${error.reason.toLowerCase()}: ${error.detail}`,
  CircuitOpen: (error) =>
    `${error.operation} call refused: the service looks down (circuit open); it is probed again in ${
      Math.ceil(error.retryAfterMillis)
    } ms`,
  ClientClosed: (error) =>
    error.whileRunning
      ? `${error.operation} call ended: the client was closed while it ran`
      : `${error.operation} call refused: the client is closed`
}

/** The message of a failure. */
export const messageOf = <E extends AnyClinicalError>(error: E): string =>
  (messages[error._tag] as (error: E) => string)(error)

/**
 * A failure's data as an instance of its tag's class in `classes` (a line's error module, whose
 * classes take the fields): how each line's `fromCore` makes its own class of the core's data.
 */
export const instanceOf = (classes: object, error: AnyClinicalError): unknown => {
  const { _tag, ...fields } = error
  return new (classes as Record<string, new(fields: object) => unknown>)[_tag]!(fields)
}
