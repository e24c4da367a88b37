/**
 * What every transport shares: a request's secrets revealed only where its bytes are written, and
 * the failures of a request (their details scrubbed of its secrets).
 */
import * as Redacted from "effect/Redacted"
import { field } from "../../../core/json.js"
import { neverConnected, timedOut, tooLargeDetail } from "../../../core/transport/failures.js"
import { InvalidConfig, TransportError } from "../../ClinicalError.js"
import { secretBodyOf } from "../call/secretText.js"
import { scrub } from "../redaction/redaction.js"
import type { TransportRequest, WireValue } from "./port.js"

export { describe, exceedsLimit, hasTimeout, neverConnected } from "../../../core/transport/failures.js"
export { jsonResponse } from "../../../core/transport/message.js"

const reveal = (value: WireValue): string => (typeof value === "string" ? value : Redacted.value(value))

/** The request's headers as they go on the wire: secrets revealed. Only for code that writes bytes. */
export const wireHeaders = (request: TransportRequest): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in request.headers) out[name] = reveal(request.headers[name]!)
  return out
}

/** The request's body as it goes on the wire: secrets revealed. Only for code that writes bytes. */
export const wireBody = (request: TransportRequest): string | undefined => {
  // A data request's body, taken as it is rather than through the `Redacted` it would make.
  const secret = secretBodyOf(request)
  if (secret !== undefined) return secret.reveal()
  return request.body === undefined ? undefined : reveal(request.body)
}

/** The body a transport sends: none for GET and HEAD, which cannot carry one (fetch refuses them). */
export const sendableBody = (request: TransportRequest): string | undefined =>
  request.method === "GET" || request.method === "HEAD" ? undefined : wireBody(request)

/** A header of the request by case-insensitive name, revealed; for in-memory handlers in tests. */
export const wireHeader = (request: TransportRequest, name: string): string | undefined => {
  const value = field(request.headers, name) as WireValue | undefined
  return value === undefined ? undefined : reveal(value)
}

/** A bearer credential without its scheme: a server or a socket may echo the token alone. */
const BEARER = /^bearer\s+/i

const secretsOf = function*(request: TransportRequest): Generator<Redacted.Redacted<string> | string> {
  for (const name in request.headers) {
    const value = request.headers[name]!
    if (typeof value === "string") continue
    yield value
    const revealed = Redacted.value(value)
    if (BEARER.test(revealed)) yield revealed.replace(BEARER, "")
  }
  if (request.body !== undefined && typeof request.body !== "string") yield request.body
}

/**
 * A `TransportError` for a request, with a detail that cannot carry the request's secrets (any
 * `Redacted` header or body value found in the detail is scrubbed out). `requestSent: false` says
 * the request surely never reached the server (see {@link neverConnected}).
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
    detail: scrub(detail, secretsOf(request)),
    ...(requestSent === undefined ? {} : { requestSent })
  })

/** A `Network` failure, with what is known of whether the request was sent. */
export const networkError = (request: TransportRequest, detail: string, cause: unknown): TransportError =>
  transportError(request, "Network", detail, neverConnected(cause) ? false : undefined)

/** The failure of a response whose body is larger than the request allowed. */
export const tooLarge = (request: TransportRequest, limit: number): TransportError =>
  transportError(request, "ResponseTooLarge", tooLargeDetail(limit))

/** The failure of a request that outlived its `timeoutMillis`. */
export const timedOutError = (request: TransportRequest): TransportError =>
  transportError(request, "Timeout", timedOut(request.timeoutMillis))

/** `InvalidConfig` for an argument a JavaScript caller got wrong. */
export const invalidArgument = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
