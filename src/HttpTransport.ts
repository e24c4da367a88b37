/**
 * The one thing the client needs from a network: send one request, get one response.
 *
 * Requests carry their secrets (`Authorization`, `ApplicationId`, a body holding a PersonUid) as
 * `Redacted` values; a transport reveals them only when it writes the bytes (`wireHeaders`,
 * `wireBody`). Interrupting `send` aborts the request on the socket.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { Agent, type Dispatcher } from "undici"
import { TransportError } from "./ClinicalError.js"
import { scrub } from "./internal/redaction.js"

/** A header value or body, kept `Redacted` when it holds a secret. */
export type WireValue = string | Redacted.Redacted<string>

/** One HTTP request. `url` is absolute. */
export interface TransportRequest {
  readonly method: HttpMethod
  readonly url: string
  readonly headers: Readonly<Record<string, WireValue>>
  readonly body?: WireValue | undefined
  /** Largest response body to read, in bytes; a larger one fails with `ResponseTooLarge`. No limit when absent. */
  readonly maxResponseBytes?: number | undefined
  /** Longest wait for the whole response; then the request is aborted and fails with `Timeout`. No limit when absent. */
  readonly timeoutMillis?: number | undefined
}

/** One HTTP response. Header names are lower-cased; repeated headers are joined with `, `. */
export interface TransportResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * Sends one request. Fails only when no usable HTTP response was received. A transport honours
 * the request's `timeoutMillis` and `maxResponseBytes`; {@link make} adds both to a plain send
 * function, so a custom transport need not implement them itself.
 */
export interface Service {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
}

/** The tag of the transport the client sends through. The application chooses the layer. */
export class HttpTransport extends Context.Tag("effect-clinical/HttpTransport")<HttpTransport, Service>() {}

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

/** The body a transport sends: none for GET and HEAD, which cannot carry one (fetch refuses them). */
const sendableBody = (request: TransportRequest): string | undefined =>
  request.method === "GET" || request.method === "HEAD" ? undefined : wireBody(request)

/** A header of the request by case-insensitive name, revealed; for in-memory handlers in tests. */
export const wireHeader = (request: TransportRequest, name: string): string | undefined => {
  const wanted = name.toLowerCase()
  for (const key in request.headers) {
    if (key.toLowerCase() === wanted) return reveal(request.headers[key]!)
  }
  return undefined
}

const secretsOf = function*(request: TransportRequest): Generator<Redacted.Redacted<string>> {
  for (const name in request.headers) {
    const value = request.headers[name]!
    if (typeof value !== "string") yield value
  }
  if (request.body !== undefined && typeof request.body !== "string") yield request.body
}

/**
 * A `TransportError` for a request, with a detail that cannot carry the request's secrets (any
 * `Redacted` header or body value found in the detail is scrubbed out).
 */
export const transportError = (
  request: TransportRequest,
  reason: TransportError["reason"],
  detail: string
): TransportError =>
  new TransportError({ reason, method: request.method, url: request.url, detail: scrub(detail, secretsOf(request)) })

/** The failure of a response whose body is larger than the request allowed. */
const tooLarge = (request: TransportRequest, limit: number): TransportError =>
  transportError(request, "ResponseTooLarge", `the response body exceeds the limit of ${limit} bytes`)

const exceedsLimit = (request: TransportRequest, bytes: number): boolean =>
  request.maxResponseBytes !== undefined && bytes > request.maxResponseBytes

/** The failure of a request that outlived its `timeoutMillis`. */
const timedOut = (request: TransportRequest): TransportError =>
  transportError(request, "Timeout", `no response within ${request.timeoutMillis} ms`)

/** Timers above this many milliseconds fire at once in Node; such a timeout is no limit at all. */
const MAX_TIMER_MILLIS = 2_147_483_647

const hasTimeout = (request: TransportRequest): request is TransportRequest & { readonly timeoutMillis: number } =>
  request.timeoutMillis !== undefined && request.timeoutMillis <= MAX_TIMER_MILLIS

const describe = (cause: unknown): string => {
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

const flattenHeaders = (
  headers: Readonly<Record<string, string | Array<string> | undefined>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) out[name] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

const splitUrl = (url: string): { readonly origin: string; readonly path: string } => {
  const slash = url.indexOf("/", url.indexOf("//") + 2)
  return slash < 0 ? { origin: url, path: "/" } : { origin: url.slice(0, slash), path: url.slice(slash) }
}

/**
 * A transport that hands requests to undici's `Dispatcher.dispatch` with a handler of its own:
 * the response body is collected straight from the socket's chunks, with no stream, no promise
 * and no `AbortController` per request (those are most of what `undici.request` costs beyond the
 * bytes). One timer per request; the timeout and an interruption both abort it on the socket.
 */
export const fromUndiciAgent = (agent: Dispatcher): Service => ({
  send: (request) =>
    Effect.async<TransportResponse, TransportError>((resume) => {
      const { origin, path } = splitUrl(request.url)
      const limit = request.maxResponseBytes
      let controller: Dispatcher.DispatchController | undefined
      let abortReason: Error | undefined
      let timer: ReturnType<typeof setTimeout> | undefined
      let settled = false
      let status = 0
      let headers: Record<string, string> = {}
      let chunks: Array<Buffer> = []
      let size = 0
      const settle = (outcome: Effect.Effect<TransportResponse, TransportError>) => {
        if (settled) return
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        chunks = []
        resume(outcome)
      }
      const abort = (reason: Error) => {
        if (controller !== undefined) controller.abort(reason)
        else abortReason = reason
      }
      const stop = (failure: TransportError) => {
        settle(Effect.fail(failure))
        abort(new Error(failure.reason))
      }
      if (hasTimeout(request)) timer = setTimeout(() => stop(timedOut(request)), request.timeoutMillis)
      try {
        agent.dispatch({
          origin,
          path,
          method: request.method,
          headers: wireHeaders(request),
          body: sendableBody(request) ?? null
        }, {
          onRequestStart: (started) => {
            controller = started
            if (abortReason !== undefined) started.abort(abortReason)
          },
          onResponseStart: (_, statusCode, responseHeaders) => {
            status = statusCode
            headers = flattenHeaders(responseHeaders)
            if (limit !== undefined && exceedsLimit(request, Number(headers["content-length"]))) {
              stop(tooLarge(request, limit))
            }
          },
          onResponseData: (_, chunk) => {
            if (settled) return
            size += chunk.length
            if (limit !== undefined && size > limit) return stop(tooLarge(request, limit))
            chunks.push(chunk)
          },
          onResponseEnd: () => {
            const body = chunks.length === 1
              ? chunks[0]!.toString("utf8")
              : Buffer.concat(chunks, size).toString("utf8")
            settle(Effect.succeed({ status, headers, body }))
          },
          onResponseError: (_, cause) => settle(Effect.fail(transportError(request, "Network", describe(cause))))
        })
      } catch (cause) {
        settle(Effect.fail(transportError(request, "Network", describe(cause))))
      }
      // Interruption: stop the timer and abort the request on the socket.
      return Effect.sync(() => {
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        abort(new Error("interrupted"))
      })
    })
})

/**
 * The default transport: undici called directly, on an `Agent` (keep-alive connection pool) that
 * this layer owns and closes with its scope. Skips `@effect/platform`'s HttpClient, which measured
 * about 3.7 times the client CPU per request of undici alone.
 */
export const layerUndici = (options?: Agent.Options): Layer.Layer<HttpTransport> =>
  Layer.scoped(
    HttpTransport,
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => new Agent(options)),
        (agent) => Effect.promise(() => agent.close())
      ),
      fromUndiciAgent
    )
  )

/** Header names `@effect/platform` must redact in its spans, beyond its own list. */
const REDACTED_HEADER_NAMES = ["authorization", "applicationid"]

/** Reads a platform response body, never holding more than the request allows. */
const readPlatformBody = (
  request: TransportRequest,
  response: HttpClientResponse.HttpClientResponse,
  network: (error: HttpClientError.HttpClientError) => TransportError
): Effect.Effect<string, TransportError> => {
  const limit = request.maxResponseBytes
  const declared = Number(response.headers["content-length"])
  if (limit === undefined || Number.isFinite(declared)) {
    return exceedsLimit(request, declared)
      ? Effect.fail(tooLarge(request, limit!))
      : Effect.mapError(response.text, network)
  }
  return response.stream.pipe(
    Stream.mapError(network),
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, size: 0 }, (read, chunk) => {
      read.size += chunk.length
      read.chunks.push(chunk)
      return exceedsLimit(request, read.size) ? Effect.fail(tooLarge(request, limit)) : Effect.succeed(read)
    }),
    Effect.map((read) => Buffer.concat(read.chunks, read.size).toString("utf8"))
  )
}

/** A transport over any `@effect/platform` HttpClient. */
export const fromHttpClient = (client: HttpClient.HttpClient): Service => ({
  send: (request) => {
    const body = sendableBody(request)
    const headers = wireHeaders(request)
    const contentType = Object.entries(headers).find(([name]) => name.toLowerCase() === "content-type")?.[1]
    const httpRequest = HttpClientRequest.make(request.method)(request.url, {
      headers,
      ...(body === undefined ? {} : { body: HttpBody.text(body, contentType) })
    })
    const network = (error: HttpClientError.HttpClientError) =>
      transportError(request, "Network", `${error._tag} (${error.reason}): ${describe(error.cause ?? error)}`)
    const exchange = client.execute(httpRequest).pipe(
      Effect.mapError(network),
      Effect.flatMap((response) =>
        Effect.map(readPlatformBody(request, response, network), (text): TransportResponse => ({
          status: response.status,
          headers: { ...response.headers },
          body: text
        }))
      ),
      // The platform client records request headers as span attributes: keep ours redacted there.
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...REDACTED_HEADER_NAMES])
    )
    return withTimeout(request, exchange)
  }
})

/** A transport over the `@effect/platform` HttpClient the application provides (fetch, node, ...). */
export const layerHttpClient: Layer.Layer<HttpTransport, never, HttpClient.HttpClient> = Layer.effect(
  HttpTransport,
  Effect.map(HttpClient.HttpClient, fromHttpClient)
)

/** Bounds `effect` by the request's `timeoutMillis` on Effect's `Clock` (so `TestClock` drives it). */
const withTimeout = <E>(
  request: TransportRequest,
  effect: Effect.Effect<TransportResponse, E>
): Effect.Effect<TransportResponse, E | TransportError> =>
  hasTimeout(request)
    ? Effect.timeoutFail(effect, { duration: request.timeoutMillis, onTimeout: () => timedOut(request) })
    : effect

/**
 * A transport from a plain send function: adds the request's `timeoutMillis` (on Effect's
 * `Clock`) and `maxResponseBytes`, so that a custom transport only has to send.
 */
export const make = (
  send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Service => ({
  send: (request) =>
    withTimeout(
      request,
      Effect.flatMap(send(request), (response) =>
        request.maxResponseBytes !== undefined && exceedsLimit(request, Buffer.byteLength(response.body))
          ? Effect.fail(tooLarge(request, request.maxResponseBytes))
          : Effect.succeed(response))
    )
})

/** An in-memory transport: every request goes to `handler`, nothing touches a network. */
export const memory: (
  handler: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
) => Service = make

/**
 * The in-memory transport for tests: every request goes to `handler`, nothing touches a network.
 * Use `wireHeaders` / `wireBody` in the handler to read what would have been sent.
 */
export const layerMemory = (
  handler: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Layer.Layer<HttpTransport> => Layer.succeed(HttpTransport, memory(handler))
