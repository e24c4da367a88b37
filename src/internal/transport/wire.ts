/**
 * What every transport shares: a request's secrets revealed only where its bytes are written, and
 * the failures of a request (their details scrubbed of its secrets).
 */
import * as Redacted from "effect/Redacted"
import { field } from "../../../core/json.js"
import { InvalidConfig, TransportError } from "../../ClinicalError.js"
import { secretBodyOf } from "../call/secretText.js"
import { scrub } from "../redaction/redaction.js"
import type { TransportRequest, TransportResponse, WireValue } from "./port.js"

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

/** Error codes of a connection that was never made: whatever the request was, the server never saw it. */
const NEVER_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT"
])

/**
 * True when a failure surely came before the request reached a server: no connection was made
 * (refused, no such host, connect timeout). The code is looked for down the cause chain (fetch
 * wraps it twice); an `AggregateError` (several addresses tried) counts when all of its errors do.
 */
export const neverConnected = (cause: unknown): boolean => {
  let current = cause
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof AggregateError) {
      return current.errors.length > 0 && current.errors.every(neverConnected)
    }
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string" && NEVER_CONNECTED.has(code)) return true
    current = (current as { readonly cause?: unknown }).cause
  }
  return false
}

/** A `Network` failure, with what is known of whether the request was sent. */
export const networkError = (request: TransportRequest, detail: string, cause: unknown): TransportError =>
  transportError(request, "Network", detail, neverConnected(cause) ? false : undefined)

/** The failure of a response whose body is larger than the request allowed. */
export const tooLarge = (request: TransportRequest, limit: number): TransportError =>
  transportError(request, "ResponseTooLarge", `the response body exceeds the limit of ${limit} bytes`)

export const exceedsLimit = (request: TransportRequest, bytes: number): boolean =>
  request.maxResponseBytes !== undefined && bytes > request.maxResponseBytes

/** The failure of a request that outlived its `timeoutMillis`. */
export const timedOutError = (request: TransportRequest): TransportError =>
  transportError(request, "Timeout", `no response within ${request.timeoutMillis} ms`)

/** Timers above this many milliseconds fire at once in Node; such a timeout is no limit at all. */
const MAX_TIMER_MILLIS = 2_147_483_647

export const hasTimeout = (
  request: TransportRequest
): request is TransportRequest & { readonly timeoutMillis: number } =>
  request.timeoutMillis !== undefined && request.timeoutMillis <= MAX_TIMER_MILLIS

export const describe = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = (cause as { readonly code?: unknown }).code
    return typeof code === "string" ? `${code}: ${cause.message}` : `${cause.name}: ${cause.message}`
  }
  return String(cause)
}

/** A JSON response, for in-memory handlers in tests. */
export const jsonResponse = (
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {}
): TransportResponse => {
  const lower: Record<string, string> = { "content-type": "application/json; charset=utf-8" }
  for (const name in headers) lower[name.toLowerCase()] = headers[name]!
  return { status, headers: lower, body: typeof body === "string" ? body : JSON.stringify(body) }
}

/** `InvalidConfig` for an argument a JavaScript caller got wrong. */
export const invalidArgument = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
