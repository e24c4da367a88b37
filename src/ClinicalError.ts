/**
 * Every failure the client can produce, as `Schema.TaggedError` classes.
 *
 * Privacy rule for this module: an error holds only what is safe to log (the operation, the HTTP
 * status, the name of a field, a reason written by us, and server text scrubbed of known secrets).
 * It never holds a token, an ApplicationId, a PersonUid, a request or a raw body, and every class
 * has an explicit `message`, because the default one prints every field.
 */
import * as Schema from "effect/Schema"

/**
 * The operation a failure belongs to: `token`, `authenticate`, or the name of a `PersonData`
 * operation (`medications`, `ethnicities`, ..., or one the application defined).
 */
export const Operation = Schema.String

/** The operation a failure belongs to. */
export type Operation = typeof Operation.Type

/**
 * Where a request went: its method and URL. Our URLs carry no patient data (the PersonUid travels
 * in the body), so they are safe to show; keep it so.
 */
const Target = {
  method: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String)
}

/** `medications request POST https://host/path (HTTP 503)`: the operation, where it went, the status. */
const describeRequest = (
  error: { readonly operation: Operation; readonly method?: string | undefined; readonly url?: string | undefined },
  status: number | undefined
): string => {
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

/** One refused setting: its name (an option's or a variable's) and why, never its value. */
export const SettingRefusal = Schema.Struct({ setting: Schema.String, reason: Schema.String })

/**
 * A setting given to `ClinicalConfig` was refused; `setting` names it. Fails the layer. When
 * several were refused, `setting` and `reason` are the first and `others` the rest, so that one
 * run names every missing variable.
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  setting: Schema.String,
  reason: Schema.String,
  others: Schema.optional(Schema.Array(SettingRefusal))
}) {
  override get message(): string {
    if (this.others === undefined || this.others.length === 0) return `invalid setting ${this.setting}: ${this.reason}`
    const all = [{ setting: this.setting, reason: this.reason }, ...this.others]
    return `invalid settings: ${all.map(({ reason, setting }) => `${setting} ${reason}`).join("; ")}`
  }
}

/** An input was refused before anything was sent; `field` names it, the value is never kept. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  operation: Operation,
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.operation} request refused before sending: ${this.field} ${this.reason}`
  }
}

/**
 * Why a request got no usable response: the network failed (`Network`), a host name did not
 * resolve (`Dns`), a certificate was refused either way (`Tls`: the server's not trusted, not for
 * its host, expired, or this client's refused), the proxy refused the tunnel (`Proxy`: its
 * credentials, or the target), an attempt outlived its timeout (`Timeout`), the call outlived its
 * deadline (`Deadline`), the body was larger than allowed (`ResponseTooLarge`), or the
 * `HttpClient` under `layerHttpClient` followed a redirect to another URL, which the client
 * refuses to read (`Redirected`). `Dns`, `Tls` and `Proxy` come from the default undici transport;
 * the detail says what to check.
 */
export const TransportFailure = Schema.Literal(
  "Network",
  "Dns",
  "Tls",
  "Proxy",
  "Timeout",
  "Deadline",
  "ResponseTooLarge",
  "Redirected"
)

/**
 * No usable HTTP response: the network failed, a timeout or the deadline fired, or the body was too
 * large. `requestSent` is `false` when the request surely never reached the server (the connection
 * was refused, the host not found), absent when that is not known.
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  operation: Schema.optional(Operation),
  reason: TransportFailure,
  method: Schema.String,
  url: Schema.String,
  detail: Schema.String,
  requestSent: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    const what = this.operation === undefined ? "request" : `${this.operation} request`
    return `${what} ${this.method} ${this.url} failed (${this.reason}): ${this.detail}`
  }
}

/**
 * HTTP 401: authentication failed or was not given. From the token endpoint: the ApplicationId was
 * refused. From any other: after one token refresh and one retry.
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  operation: Operation,
  ...Target,
  status: Schema.Number
}) {
  override get message(): string {
    return `${describeRequest(this, this.status)} was refused as unauthorized${tokenAdvice(this.operation)}`
  }
}

/** HTTP 419: the token exceeded its lifetime (after one token refresh and one retry). */
export class TokenExpired extends Schema.TaggedError<TokenExpired>()("TokenExpired", {
  operation: Operation,
  ...Target,
  status: Schema.Number
}) {
  override get message(): string {
    return `${describeRequest(this, this.status)} was refused: the token exceeded its lifetime${
      this.operation === "token" ? "" : tokenAdvice(this.operation)
    }`
  }
}

/** HTTP 400: the service found data or a prerequisite missing. */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  operation: Operation,
  ...Target,
  status: Schema.Number
}) {
  override get message(): string {
    return `${describeRequest(this, this.status)} was refused as a bad request${
      this.operation === "token" ? tokenAdvice(this.operation) : ""
    }`
  }
}

/** HTTP 429: throttled; `retryAfterMillis` is the parsed `Retry-After`, when the server sent one. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  operation: Operation,
  ...Target,
  status: Schema.Number,
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    const after = this.retryAfterMillis === undefined ? "" : `; retry after ${this.retryAfterMillis} ms`
    return `${describeRequest(this, this.status)} was rate limited${after}`
  }
}

/** HTTP 5xx: the service failed; `retryAfterMillis` is the parsed `Retry-After` (503), when sent. */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", {
  operation: Operation,
  ...Target,
  status: Schema.Number,
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    const after = this.retryAfterMillis === undefined ? "" : `; retry after ${this.retryAfterMillis} ms`
    return `${describeRequest(this, this.status)} failed with a server error${after}`
  }
}

/**
 * Any other non-2xx status (405 included). A redirect (3xx) is one: the client never follows it,
 * and `location` holds only the origin it pointed to (scheme, host and port; no path or query).
 */
export class UnexpectedStatus extends Schema.TaggedError<UnexpectedStatus>()("UnexpectedStatus", {
  operation: Operation,
  ...Target,
  status: Schema.Number,
  location: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const redirect = this.status < 300 || this.status > 399
      ? ""
      : `: a redirect${this.location === undefined ? "" : ` to ${this.location}`}, which the client never follows`
    return `${describeRequest(this, this.status)} got an unexpected status${redirect}`
  }
}

/** The response could not be understood: not JSON, the wrong shape, or bad token headers. */
export class ResponseDecodeError extends Schema.TaggedError<ResponseDecodeError>()("ResponseDecodeError", {
  operation: Operation,
  ...Target,
  status: Schema.Number,
  reason: Schema.String
}) {
  override get message(): string {
    return `${describeRequest(this, this.status)} returned a response that could not be decoded: ${this.reason}`
  }
}

/**
 * The service answered with its envelope and `Success: false`, whatever the HTTP status.
 * `errorType` and `errorMessage` are the server's, with any known secret replaced by `<redacted>`.
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  operation: Operation,
  ...Target,
  status: Schema.Number,
  errorType: Schema.NullOr(Schema.String),
  errorMessage: Schema.NullOr(Schema.String)
}) {
  override get message(): string {
    const type = this.errorType === null ? "" : ` ${this.errorType}`
    const text = this.errorMessage === null ? "" : `: ${this.errorMessage}`
    return `${describeRequest(this, this.status)} reported failure${type}${text}`
  }
}

/**
 * The shared token store (`TokenStore.layerRedis`) could not be used, and its settings say to fail
 * rather than fall back to a token of this instance's own: it did not answer in time (`Timeout`),
 * refused or lost the connection (`Unavailable`), or holds a value this instance cannot read, such
 * as one sealed with another key (`Unreadable`). Retried like a network failure.
 */
export class TokenStoreError extends Schema.TaggedError<TokenStoreError>()("TokenStoreError", {
  operation: Operation,
  reason: Schema.Literal("Timeout", "Unavailable", "Unreadable"),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.operation} store ${this.reason.toLowerCase()}: ${this.detail}`
  }
}

/**
 * The client's circuit breaker is open: so many requests in a row failed in a way that says the
 * service is down (the network failing, a 5xx, an attempt timing out) that calls fail at once for a
 * cool-down instead of piling on it. Nothing was sent. `retryAfterMillis` is when the breaker lets a
 * call through to probe the service; the first probe that gets an answer closes it. Worth waiting
 * for, not a failure of this call's input: a batch waits and sends again.
 */
export class CircuitOpen extends Schema.TaggedError<CircuitOpen>()("CircuitOpen", {
  operation: Operation,
  retryAfterMillis: Schema.Number
}) {
  override get message(): string {
    return `${this.operation} call refused: the service looks down (circuit open); it is probed again in ${
      Math.ceil(this.retryAfterMillis)
    } ms`
  }
}

/**
 * A Promise client (`effect-clinical/promise`) was closed: a call made after `close()` is refused
 * before anything is sent; a call still running when `close()` was called is ended at once (its
 * request aborted on the socket). Not a failure of a request: Effect programs never see it.
 */
export class ClientClosed extends Schema.TaggedError<ClientClosed>()("ClientClosed", {
  operation: Operation,
  whileRunning: Schema.Boolean
}) {
  override get message(): string {
    return this.whileRunning
      ? `${this.operation} call ended: the client was closed while it ran`
      : `${this.operation} call refused: the client is closed`
  }
}

/** Every failure of a request, as a Schema (for serialising errors across a boundary). */
export const ClinicalError = Schema.Union(
  InvalidRequest,
  TransportError,
  Unauthorized,
  TokenExpired,
  BadRequest,
  RateLimited,
  ServerError,
  UnexpectedStatus,
  ResponseDecodeError,
  ApiError,
  TokenStoreError,
  CircuitOpen
)

/** Every failure of a request. */
export type ClinicalError = typeof ClinicalError.Type

/** What a failed HTTP exchange can end in (everything but `InvalidRequest`). */
export type HttpError = Exclude<ClinicalError, InvalidRequest>

/** True for a failure of a request (the {@link ClinicalError} union), the channel of every operation. */
export const isRequestError: (u: unknown) => u is ClinicalError = Schema.is(ClinicalError)

/**
 * Every error the library fails, throws or rejects with: a request's failure, a refused setting,
 * and (from `effect-clinical/promise`) a call on a closed client.
 */
export const AnyClinicalError = Schema.Union(ClinicalError, InvalidConfig, ClientClosed)

/** Every error the library fails, throws or rejects with. */
export type AnyClinicalError = typeof AnyClinicalError.Type

/**
 * True for every error the library fails, throws or rejects with (`InvalidConfig` and
 * `ClientClosed` included); {@link isRequestError} for a request's failures alone.
 */
export const isClinicalError: (u: unknown) => u is AnyClinicalError = Schema.is(AnyClinicalError)
