/**
 * Every failure of the client, as `Schema.TaggedError` classes of Effect 4: the core's failures
 * (core/errors.ts, checked below to match), each `message` the core's.
 *
 * Privacy rule for this module: an error holds only what is safe to log (the operation, the HTTP
 * status, the name of a field, a reason written by us, and server text scrubbed of known secrets).
 * It never holds a token, an ApplicationId, a PersonUid, a request or a raw body, and every class
 * has an explicit `message`, because the default one prints every field.
 */
import * as Schema from "effect/Schema"
import type * as Core from "../../core/errors.js"
import { messageOf, TOKEN_STORE_FAILURES, TRANSPORT_FAILURES } from "../../core/errors.js"
import type * as CoreQueue from "../../core/queue/queueError.js"
import { message as queueMessage } from "../../core/queue/queueError.js"

/**
 * The operation a failure belongs to: `token`, `authenticate`, or the name of a `PersonData`
 * operation (`medications`, `ethnicities`, ..., or one the application defined).
 */
export const Operation = Schema.String

/** The operation a failure belongs to. */
export type Operation = typeof Operation.Type

/** Where a request went: its method and URL (our URLs carry no patient data: keep it so). */
const Target = { method: Schema.optional(Schema.String), url: Schema.optional(Schema.String) }

/** An HTTP status the service answered with, for a request of an operation. */
const Status = { operation: Operation, ...Target, status: Schema.Number }

/** One refused setting: its name (an option's or a variable's) and why, never its value. */
export const SettingRefusal = Schema.Struct({ setting: Schema.String, reason: Schema.String })

/**
 * A setting was refused; `setting` names it. Fails the layer. When several were refused, `setting`
 * and `reason` are the first and `others` the rest, so that one run names every missing variable.
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  setting: Schema.String,
  reason: Schema.String,
  others: Schema.optional(Schema.Array(SettingRefusal))
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/** An input was refused before anything was sent; `field` names it, the value is never kept. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  operation: Operation,
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * Why a request got no usable response: the network (`Network`), a host name (`Dns`), a
 * certificate either way (`Tls`), the proxy (`Proxy`), an attempt's timeout (`Timeout`), the
 * call's deadline (`Deadline`), a body larger than allowed (`ResponseTooLarge`), or a redirect an
 * `HttpClient` followed (`Redirected`).
 */
export const TransportFailure = Schema.Literals(TRANSPORT_FAILURES)

/**
 * No usable HTTP response. `requestSent` is `false` when the request surely never reached the
 * server (the connection was refused, the host not found), absent when that is not known.
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
    return messageOf(this)
  }
}

/**
 * HTTP 401: authentication failed or was not given. From the token endpoint: the ApplicationId was
 * refused. From any other: after one token refresh and one retry.
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", Status) {
  override get message(): string {
    return messageOf(this)
  }
}

/** HTTP 419: the token exceeded its lifetime (after one token refresh and one retry). */
export class TokenExpired extends Schema.TaggedError<TokenExpired>()("TokenExpired", Status) {
  override get message(): string {
    return messageOf(this)
  }
}

/** HTTP 400: the service found data or a prerequisite missing. */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", Status) {
  override get message(): string {
    return messageOf(this)
  }
}

/** HTTP 429: throttled; `retryAfterMillis` is the parsed `Retry-After`, when the server sent one. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...Status,
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/** HTTP 5xx: the service failed; `retryAfterMillis` is the parsed `Retry-After` (503), when sent. */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", {
  ...Status,
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * Any other non-2xx status (405 included). A redirect (3xx) is one: the client never follows it,
 * and `location` holds only the origin it pointed to (scheme, host and port; no path or query).
 */
export class UnexpectedStatus extends Schema.TaggedError<UnexpectedStatus>()("UnexpectedStatus", {
  ...Status,
  location: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/** The response could not be understood: not JSON, the wrong shape, or bad token headers. */
export class ResponseDecodeError extends Schema.TaggedError<ResponseDecodeError>()("ResponseDecodeError", {
  ...Status,
  reason: Schema.String
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * The service answered with its envelope and `Success: false`, whatever the HTTP status.
 * `errorType` and `errorMessage` are the server's, with any known secret replaced by `<redacted>`.
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  ...Status,
  errorType: Schema.NullOr(Schema.String),
  errorMessage: Schema.NullOr(Schema.String)
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * The shared token store could not be used, and its settings say to fail rather than fall back to
 * a token of this instance's own: no answer in time (`Timeout`), no connection (`Unavailable`), or
 * a value this instance cannot read (`Unreadable`). Retried like a network failure.
 */
export class TokenStoreError extends Schema.TaggedError<TokenStoreError>()("TokenStoreError", {
  operation: Operation,
  reason: Schema.Literals(TOKEN_STORE_FAILURES),
  detail: Schema.String
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * The circuit breaker is open: requests in a row failed in a way that says the service is down, so
 * calls fail at once for a cool-down. Nothing was sent; `retryAfterMillis` is when a probe goes.
 */
export class CircuitOpen extends Schema.TaggedError<CircuitOpen>()("CircuitOpen", {
  operation: Operation,
  retryAfterMillis: Schema.Number
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/**
 * A Promise client was closed: a call made after `close()` is refused before anything is sent; a
 * call still running is ended at once. Effect programs never see it.
 */
export class ClientClosed extends Schema.TaggedError<ClientClosed>()("ClientClosed", {
  operation: Operation,
  whileRunning: Schema.Boolean
}) {
  override get message(): string {
    return messageOf(this)
  }
}

/** Every failure of a request, as a Schema (for serialising errors across a boundary). */
export const ClinicalError = Schema.Union([
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
])

/** Every failure of a request. */
export type ClinicalError = typeof ClinicalError.Type

/** What a failed HTTP exchange can end in (everything but `InvalidRequest`). */
export type HttpError = Exclude<ClinicalError, InvalidRequest>

/** True for a failure of a request (the {@link ClinicalError} union), the channel of every operation. */
export const isRequestError: (u: unknown) => u is ClinicalError = Schema.is(ClinicalError)

/** Every error the library fails, throws or rejects with. */
export const AnyClinicalError = Schema.Union([ClinicalError, InvalidConfig, ClientClosed])

/** Every error the library fails, throws or rejects with. */
export type AnyClinicalError = typeof AnyClinicalError.Type

/** True for every error the library fails, throws or rejects with. */
export const isClinicalError: (u: unknown) => u is AnyClinicalError = Schema.is(AnyClinicalError)

// Each class holds what the core's failure of its tag holds, both ways: the core's decisions read them.
const sameShape = <A, B extends A>(line: (value: B) => A): typeof line => line
void sameShape<Core.AnyClinicalError, AnyClinicalError>((error) => error)
void sameShape<Core.HttpError, HttpError>((error) => error)

/**
 * The queue's own failure (`effect-clinical/bullmq`): Redis or BullMQ failed (unreachable, a command
 * refused), or the queue refused what was asked. Its detail never holds job data (ids at most) nor
 * a Redis password. Not a request's failure: the queue's operations fail with it, beside `InvalidConfig`.
 */
export class QueueError extends Schema.TaggedError<QueueError>()("QueueError", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return queueMessage(this)
  }
}
void sameShape<CoreQueue.QueueError, QueueError>((error) => error)
