/**
 * What every transport of this line shares: a request's secrets revealed only where its bytes are
 * written, and the failures of a request (their details scrubbed of its secrets). The decisions are
 * the core's (core/transport/failures.ts); this is their Effect 4 form.
 */
import * as Redacted from "effect/Redacted"
import { labelledFields } from "../../../../core/errors.js"
import { field } from "../../../../core/json.js"
import * as Redaction from "../../../../core/redaction/redaction.js"
import { describe, neverConnected, timedOut, tooLargeDetail } from "../../../../core/transport/failures.js"
import type { Received } from "../../../../core/transport/message.js"
export { jsonResponse } from "../../../../core/transport/message.js"
import { InvalidConfig, TransportError } from "../../ClinicalError.js"

/** A header value or body: `Redacted` when it holds a secret. */
export type WireValue = string | Redacted.Redacted<string>

/** One HTTP request. `url` is absolute. */
export interface TransportRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "HEAD" | "OPTIONS"
  readonly url: string
  readonly headers: Readonly<Record<string, WireValue>>
  readonly body?: WireValue | undefined
  /** Largest response body to read, in bytes; a larger one fails with `ResponseTooLarge`. No limit when absent. */
  readonly maxResponseBytes?: number | undefined
  /** Longest wait for the whole response; then the request is aborted and fails with `Timeout`. No limit when absent. */
  readonly timeoutMillis?: number | undefined
}

/** One HTTP response. Header names are lower-cased; repeated headers are joined with `, `. */
export type TransportResponse = Received

const reveal = (value: WireValue): string => (typeof value === "string" ? value : Redacted.value(value))

/** The request's headers as they go on the wire: secrets revealed. Only for code that writes bytes. */
export const wireHeaders = (request: TransportRequest): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in request.headers) out[name] = reveal(request.headers[name]!)
  return out
}

/** The request's body as it goes on the wire: secrets revealed. Only for code that writes bytes. */
export const wireBody = (request: TransportRequest): string | undefined =>
  request.body === undefined ? undefined : reveal(request.body)

/** The body a transport sends: none for GET and HEAD, which cannot carry one. */
export const sendableBody = (request: TransportRequest): string | undefined =>
  request.method === "GET" || request.method === "HEAD" ? undefined : wireBody(request)

/** A header of the request by case-insensitive name, revealed; for in-memory handlers in tests. */
export const wireHeader = (request: TransportRequest, name: string): string | undefined => {
  const value = field(request.headers, name) as WireValue | undefined
  return value === undefined ? undefined : reveal(value)
}

/** A bearer credential without its scheme: a server or a socket may echo the token alone. */
const BEARER = /^bearer\s+/i

/** The request's secrets, revealed only to be searched for in a detail. */
const secretsOf = function*(request: TransportRequest): Generator<string> {
  for (const name in request.headers) {
    const value = request.headers[name]!
    if (typeof value === "string") continue
    const revealed = Redacted.value(value)
    yield revealed
    if (BEARER.test(revealed)) yield revealed.replace(BEARER, "")
  }
  if (request.body !== undefined && typeof request.body !== "string") yield Redacted.value(request.body)
}

/**
 * A `TransportError` for a request, with a detail that cannot carry the request's secrets (any
 * `Redacted` header or body value found in the detail is scrubbed out).
 */
export const transportError = (
  request: TransportRequest,
  reason: TransportError["reason"],
  detail: string,
  requestSent?: boolean
): TransportError =>
  new TransportError({
    reason,
    method: request.method,
    url: request.url,
    detail: Redaction.scrub(detail, secretsOf(request)),
    ...(requestSent === undefined ? {} : { requestSent })
  })

/**
 * A transport's failure as an operation's: labelled with it, its detail scrubbed of `secrets` too
 * (the transport knows a request's secrets as whole values, not a pass code inside a body).
 */
export const labelled = (
  error: TransportError,
  operation: string,
  secrets: Iterable<string | undefined>
): TransportError => new TransportError(labelledFields(error, operation, (detail) => Redaction.scrub(detail, secrets)))

/** A `Network` failure, with what is known of whether the request was sent. */
export const networkError = (request: TransportRequest, cause: unknown): TransportError =>
  transportError(request, "Network", describe(cause), neverConnected(cause) ? false : undefined)

/** The failure of a response whose body is larger than the request allowed. */
export const tooLarge = (request: TransportRequest, limit: number): TransportError =>
  transportError(request, "ResponseTooLarge", tooLargeDetail(limit))

/** The failure of a request that outlived its `timeoutMillis`. */
export const timedOutError = (request: TransportRequest): TransportError =>
  transportError(request, "Timeout", timedOut(request.timeoutMillis))

/** `InvalidConfig` for an argument a JavaScript caller got wrong. */
export const invalidArgument = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
