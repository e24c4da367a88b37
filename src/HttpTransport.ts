/**
 * The one thing the client needs from a network: send one request, get one response.
 *
 * Requests carry their secrets (`Authorization`, `ApplicationId`, a body holding a PersonUid) as
 * `Redacted` values; a transport reveals them only when it writes the bytes (`wireHeaders`,
 * `wireBody`). Interrupting `send` aborts the request on the socket.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { constTrue } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { isUtf8 } from "node:buffer"
import { Agent, type Dispatcher } from "undici"
import { InvalidConfig, TransportError } from "./ClinicalError.js"
import { callback } from "./internal/call/callback.js"
import { secretBodyOf, type WireValue as SecretTextWireValue } from "./internal/call/secretText.js"
import { field } from "./internal/json.js"
import { scrub } from "./internal/redaction/redaction.js"
import { splitUrl } from "./internal/url.js"

/** A header value or body, kept `Redacted` when it holds a secret. */
export type WireValue = SecretTextWireValue

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
  /**
   * True when the body's bytes were not UTF-8 (the body then holds U+FFFD in their place): the
   * client refuses such a body rather than read corrupted clinical text. A transport that only
   * sees text leaves it out.
   */
  readonly invalidUtf8?: boolean | undefined
}

/**
 * Sends one request. Fails only when no usable HTTP response was received. A transport honours
 * the request's `timeoutMillis` and `maxResponseBytes`; {@link make} adds both to a plain send
 * function, so a custom transport need not implement them itself.
 */
export interface Service {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
  /**
   * The same send in callback form, offered by a transport that has one natively (the undici
   * transport): `done` is called once, with the response or the failure; calling the function
   * returned aborts the request, and `done` is then not called. The client's common path sends
   * through it without suspending a fiber; a transport without it is sent through `send`.
   */
  readonly dispatch?: (
    request: TransportRequest,
    done: (outcome: Either.Either<TransportResponse, TransportError>) => void
  ) => () => void
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
export const wireBody = (request: TransportRequest): string | undefined => {
  // A data request's body, taken as it is rather than through the `Redacted` it would make.
  const secret = secretBodyOf(request)
  if (secret !== undefined) return secret.reveal()
  return request.body === undefined ? undefined : reveal(request.body)
}

/** The body a transport sends: none for GET and HEAD, which cannot carry one (fetch refuses them). */
const sendableBody = (request: TransportRequest): string | undefined =>
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
const networkError = (request: TransportRequest, detail: string, cause: unknown): TransportError =>
  transportError(request, "Network", detail, neverConnected(cause) ? false : undefined)

/** The failure of a response whose body is larger than the request allowed. */
const tooLarge = (request: TransportRequest, limit: number): TransportError =>
  transportError(request, "ResponseTooLarge", `the response body exceeds the limit of ${limit} bytes`)

const exceedsLimit = (request: TransportRequest, bytes: number): boolean =>
  request.maxResponseBytes !== undefined && bytes > request.maxResponseBytes

/** The failure of a request that outlived its `timeoutMillis`. */
const timedOutError = (request: TransportRequest): TransportError =>
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

/**
 * One request through undici's `Dispatcher.dispatch`, as its own handler: the response body is
 * collected straight from the socket's chunks, with no stream, no promise and no
 * `AbortController` (those are most of what `undici.request` costs beyond the bytes). One timer;
 * the timeout and an interruption both abort the request on the socket. A class rather than a
 * handler object literal: it lives as long as the request, and V8 would pretenure such a literal
 * under load (see `internal/callback`).
 */
class UndiciExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined = undefined
  private abortReason: Error | undefined = undefined
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  private settled = false
  private status = 0
  private headers: Record<string, string> = NO_HEADERS
  // The body's chunks: most bodies come in one, so an array only from the second.
  private first: Buffer | undefined = undefined
  private more: Array<Buffer> | undefined = undefined
  private size = 0

  constructor(
    private readonly request: TransportRequest,
    private readonly done: (outcome: Either.Either<TransportResponse, TransportError>) => void
  ) {}

  /** Sends the request; returns the function that calls it off (then `done` is not called). */
  start(agent: Dispatcher): () => void {
    const request = this.request
    if (hasTimeout(request)) this.timer = setTimeout(() => this.stop(timedOutError(request)), request.timeoutMillis)
    const { origin, path } = splitUrl(request.url)
    try {
      agent.dispatch({
        origin,
        path,
        method: request.method,
        headers: wireHeaders(request),
        body: sendableBody(request) ?? null
      }, this)
    } catch (cause) {
      this.settle(Either.left(networkError(request, describe(cause), cause)))
    }
    return () => {
      this.settled = true
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.abort(new Error("interrupted"))
    }
  }

  private settle(outcome: Either.Either<TransportResponse, TransportError>): void {
    if (this.settled) return
    this.settled = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.first = this.more = undefined
    this.done(outcome)
  }

  private abort(reason: Error): void {
    if (this.controller !== undefined) this.controller.abort(reason)
    else this.abortReason = reason
  }

  private stop(failure: TransportError): void {
    this.settle(Either.left(failure))
    this.abort(new Error(failure.reason))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    if (this.abortReason !== undefined) controller.abort(this.abortReason)
  }

  onResponseStart(
    _: Dispatcher.DispatchController,
    statusCode: number,
    responseHeaders: Readonly<Record<string, string | Array<string> | undefined>>
  ): void {
    this.status = statusCode
    this.headers = flattenHeaders(responseHeaders)
    // A redirect is answered as it is, its body unread: the request is aborted.
    if (statusCode >= 300 && statusCode <= 399) {
      this.settle(Either.right({ status: statusCode, headers: this.headers, body: "", invalidUtf8: false }))
      return this.abort(new Error("redirect"))
    }
    const limit = this.request.maxResponseBytes
    if (limit !== undefined && exceedsLimit(this.request, Number(this.headers["content-length"]))) {
      this.stop(tooLarge(this.request, limit))
    }
  }

  onResponseData(_: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return
    this.size += chunk.length
    const limit = this.request.maxResponseBytes
    if (limit !== undefined && this.size > limit) return this.stop(tooLarge(this.request, limit))
    if (this.first === undefined) this.first = chunk
    else if (this.more === undefined) this.more = [this.first, chunk]
    else this.more.push(chunk)
  }

  onResponseEnd(): void {
    const bytes = this.more !== undefined ? Buffer.concat(this.more, this.size) : this.first
    this.settle(Either.right(
      bytes === undefined
        ? { status: this.status, headers: this.headers, body: "", invalidUtf8: false }
        : { status: this.status, headers: this.headers, body: bytes.toString("utf8"), invalidUtf8: !isUtf8(bytes) }
    ))
  }

  onResponseError(_: Dispatcher.DispatchController, cause: Error): void {
    this.settle(Either.left(networkError(this.request, describe(cause), cause)))
  }
}

/** The headers of a response that has not started. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** A transport over an undici dispatcher: every request an {@link UndiciExchange}. */
export const fromUndiciAgent = (agent: Dispatcher): Service => {
  const dispatch: NonNullable<Service["dispatch"]> = (request, done) => new UndiciExchange(request, done).start(agent)
  return {
    dispatch,
    // Interruption stops the timer and aborts the request on the socket.
    send: (request) => callback<TransportResponse, TransportError>((resume) => dispatch(request, resume))
  }
}

/** `InvalidConfig` for an argument a JavaScript caller got wrong. */
const invalidArgument = (setting: string, reason: string) => new InvalidConfig({ setting, reason })

/**
 * The default transport: undici called directly, on an `Agent` (keep-alive connection pool) that
 * this layer owns and closes with its scope. Skips `@effect/platform`'s HttpClient, which measured
 * about 3.7 times the client CPU per request of undici alone. Options undici refuses fail the layer
 * with `InvalidConfig`.
 */
export const layerUndici = (options?: Agent.Options): Layer.Layer<HttpTransport, InvalidConfig> =>
  Layer.scoped(
    HttpTransport,
    Effect.map(
      Effect.acquireRelease(
        options !== undefined && (typeof options !== "object" || options === null)
          ? Effect.fail(invalidArgument("agentOptions", "must be an object of undici Agent options"))
          : Effect.try({
            try: () => new Agent(options),
            catch: (cause) => invalidArgument("agentOptions", `were refused by undici: ${describe(cause)}`)
          }),
        (agent) => Effect.promise(() => agent.close())
      ),
      fromUndiciAgent
    )
  )

/** The declared size of a body that arrives exactly as sent (no Content-Encoding), if any. */
const plainLength = (headers: Readonly<Record<string, string>>): number | undefined => {
  const encoding = headers["content-encoding"]
  if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") return undefined
  const length = headers["content-length"]
  return length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : undefined
}

/** Answers that carry no body. */
const hasNoBody = (request: TransportRequest, status: number): boolean =>
  request.method === "HEAD" || status === 204 || status === 205 || status === 304

/**
 * Reads a platform response body, never holding more than the request allows. A body sent as it
 * is with a declared length is read whole when that length is within the limit and refused at once
 * when it is not; any other body (chunked, or one the client decodes, as fetch inflates gzip) is
 * counted while it streams, after decoding, and the read stops at the limit.
 */
const readPlatformBody = (
  request: TransportRequest,
  response: HttpClientResponse.HttpClientResponse,
  network: (error: HttpClientError.HttpClientError) => TransportError
): Effect.Effect<Uint8Array, TransportError> => {
  if (hasNoBody(request, response.status)) return Effect.succeed(NO_BYTES)
  const whole = Effect.map(Effect.mapError(response.arrayBuffer, network), (buffer) => new Uint8Array(buffer))
  const limit = request.maxResponseBytes
  if (limit === undefined) return whole
  const declared = plainLength(response.headers)
  if (declared !== undefined) return declared > limit ? Effect.fail(tooLarge(request, limit)) : whole
  return response.stream.pipe(
    Stream.runFoldEffect({ chunks: [] as Array<Uint8Array>, size: 0 }, (read, chunk) => {
      read.size += chunk.length
      read.chunks.push(chunk)
      return read.size > limit ? Effect.fail(tooLarge(request, limit)) : Effect.succeed(read)
    }),
    Effect.map((read): Uint8Array => Buffer.concat(read.chunks, read.size)),
    Effect.catchAll((error): Effect.Effect<Uint8Array, TransportError> =>
      error._tag === "TransportError"
        ? Effect.fail(error)
        : error._tag === "ResponseError" && error.reason === "EmptyBody"
        ? Effect.succeed(NO_BYTES)
        : Effect.fail(network(error))
    )
  )
}

const NO_BYTES = new Uint8Array(0)

/** The origin of a URL, or the URL itself if it has none. */
const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/** A platform response as the client reads it (a class, as every object made per request: see `internal/callback`). */
class PlatformResponse implements TransportResponse {
  readonly body: string
  readonly invalidUtf8: boolean
  constructor(readonly status: number, readonly headers: Readonly<Record<string, string>>, bytes: Uint8Array) {
    this.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")
    this.invalidUtf8 = !isUtf8(bytes)
  }
}

/**
 * A transport over any `@effect/platform` HttpClient.
 *
 * - Redirects are never followed: fetch is told `redirect: "manual"` (so a 3xx comes back as it
 *   is, unread), on top of the application's `FetchHttpClient.RequestInit` (`requestInit`, or the
 *   one in context). A response whose request is not ours (a client wrapped in `followRedirects`)
 *   is refused with `Redirected`; such a client has already sent the request elsewhere, so never
 *   use one.
 * - Each request runs under a scope of its own (`HttpClient.withScope`), so the platform hands it
 *   our abort signal: an exchange that does not end with a body read whole (a failure, a refused
 *   body, a timeout, an interruption) closes it, which aborts the request on the socket at once.
 * - The platform's own span (which records every header, and may add propagation headers) is
 *   turned off: the client records one span per attempt itself, as on every transport.
 */
export const fromHttpClient = (
  client: HttpClient.HttpClient,
  requestInit: globalThis.RequestInit = {}
): Service => {
  if (typeof client !== "object" || client === null || !(HttpClient.TypeId in client)) {
    throw invalidArgument("client", "must be an @effect/platform HttpClient")
  }
  const scoped = HttpClient.withScope(client)
  // fetch's options: the application's (given here, or in context at the request), redirects never
  // followed. Merged once for each RequestInit found in context, not on every request.
  const direct: globalThis.RequestInit = { ...requestInit, redirect: "manual" }
  let lastGiven: globalThis.RequestInit | undefined
  let lastMerged = direct
  const initFor = (context: Context.Context<never>): globalThis.RequestInit => {
    const given = Context.getOrElse(context, FetchHttpClient.RequestInit, () => undefined)
    if (given === undefined) return direct
    if (given !== lastGiven) {
      lastMerged = { ...requestInit, ...given, redirect: "manual" }
      lastGiven = given
    }
    return lastMerged
  }
  return {
    send: (request) => {
      const body = sendableBody(request)
      const headers = wireHeaders(request)
      const contentType = wireHeader(request, "content-type")
      const httpRequest = HttpClientRequest.make(request.method)(request.url, {
        headers,
        ...(body === undefined ? {} : { body: HttpBody.text(body, contentType) })
      })
      const network = (error: HttpClientError.HttpClientError) =>
        networkError(request, `${error._tag} (${error.reason}): ${describe(error.cause ?? error)}`, error)
      return Effect.flatMap(Scope.make(), (scope) => {
        const abort = Scope.close(scope, Exit.void)
        const exchange = Effect.flatMap(
          Effect.mapError(scoped.execute(httpRequest), network),
          (response): Effect.Effect<TransportResponse, TransportError> => {
            if (response.request.url !== httpRequest.url) {
              return Effect.fail(transportError(
                request,
                "Redirected",
                `the HttpClient followed a redirect to ${
                  originOf(response.request.url)
                }; use a client that does not follow redirects`
              ))
            }
            const answer = (bytes: Uint8Array): TransportResponse =>
              new PlatformResponse(response.status, { ...response.headers }, bytes)
            // A redirect is answered as it is, its body unread (and its request aborted).
            if (response.status >= 300 && response.status <= 399) return Effect.as(abort, answer(NO_BYTES))
            return Effect.map(readPlatformBody(request, response, network), answer)
          }
        )
        // The request's scope, fetch told not to follow redirects (on top of the application's
        // options), and no span of the platform's own: the client records one span per attempt
        // itself, the same on every transport, and the platform's would record every header.
        const configured = exchange.pipe(
          Effect.mapInputContext((context: Context.Context<never>) =>
            Context.merge(
              context,
              Context.make(Scope.Scope, scope).pipe(
                Context.add(FetchHttpClient.RequestInit, initFor(context))
              )
            )
          ),
          Effect.locally(HttpClient.currentTracerDisabledWhen, constTrue)
        )
        return bounded(request, scope, abort, configured)
      })
    }
  }
}

/**
 * Ends a platform exchange: a body read whole leaves the connection to the pool; anything else (a
 * failure, a refused body, an interruption) closes the request's scope, which fires the abort
 * signal the platform handed the client. The request's timeout closes the scope too, with no fiber
 * of its own (a fiber racing the exchange would cost a quarter of a fetch call more): the client
 * then fails the request, and that failure is reported as `Timeout`. Every @effect/platform client
 * honours its signal; one that ignores it cannot be timed out. One step for all of it, and nothing
 * to do on success but stop the timer.
 */
const bounded = (
  request: TransportRequest,
  scope: Scope.CloseableScope,
  abort: Effect.Effect<void>,
  exchange: Effect.Effect<TransportResponse, TransportError>
): Effect.Effect<TransportResponse, TransportError> =>
  Effect.uninterruptibleMask((restore) => {
    let timedOut = false
    const timer = hasTimeout(request)
      ? setTimeout(() => {
        timedOut = true
        Effect.runFork(Scope.close(scope, Exit.void))
      }, request.timeoutMillis)
      : undefined
    return Effect.matchCauseEffect(restore(exchange), {
      onFailure: (cause) => {
        if (timer !== undefined) clearTimeout(timer)
        // A failure that the timer caused (the client failing its aborted request) is the timeout.
        return Effect.zipRight(
          abort,
          Effect.failCause(timedOut ? Cause.map(cause, () => timedOutError(request)) : cause)
        )
      },
      onSuccess: (response) => {
        if (timer !== undefined) clearTimeout(timer)
        return Effect.succeed(response)
      }
    })
  })

/**
 * A transport over the `@effect/platform` HttpClient the application provides (fetch, node, ...).
 * A `FetchHttpClient.RequestInit` provided where this layer is built (a dispatcher for a proxy or
 * mTLS, say) is used for every request, with `redirect: "manual"` on top.
 */
export const layerHttpClient: Layer.Layer<HttpTransport, never, HttpClient.HttpClient> = Layer.effect(
  HttpTransport,
  Effect.gen(function*() {
    const requestInit = yield* Effect.serviceOption(FetchHttpClient.RequestInit)
    return fromHttpClient(yield* HttpClient.HttpClient, Option.getOrUndefined(requestInit))
  })
)

/** Bounds `effect` by the request's `timeoutMillis` on Effect's `Clock` (so `TestClock` drives it). */
const withTimeout = <E>(
  request: TransportRequest,
  effect: Effect.Effect<TransportResponse, E>
): Effect.Effect<TransportResponse, E | TransportError> =>
  hasTimeout(request)
    ? Effect.timeoutFail(effect, { duration: request.timeoutMillis, onTimeout: () => timedOutError(request) })
    : effect

/**
 * A transport from a plain send function: adds the request's `timeoutMillis` (on Effect's
 * `Clock`) and `maxResponseBytes`, so that a custom transport only has to send.
 */
export const make = (
  send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Service => {
  if (typeof send !== "function") throw invalidArgument("send", "must be a function from a request to an Effect")
  return {
    send: (request) => {
      // A JavaScript caller's send may return a Promise or nothing: say so, rather than die.
      const sent: unknown = send(request)
      if (!Effect.isEffect(sent)) {
        return Effect.fail(transportError(request, "Network", "the transport's send did not return an Effect"))
      }
      return withTimeout(
        request,
        Effect.flatMap(
          sent as Effect.Effect<TransportResponse, TransportError>,
          (response) =>
            request.maxResponseBytes !== undefined && exceedsLimit(request, Buffer.byteLength(response.body))
              ? Effect.fail(tooLarge(request, request.maxResponseBytes))
              : Effect.succeed(response)
        )
      )
    }
  }
}

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
): Layer.Layer<HttpTransport, InvalidConfig> =>
  typeof handler === "function"
    ? Layer.succeed(HttpTransport, memory(handler))
    : Layer.fail(invalidArgument("handler", "must be a function from a request to an Effect of a response"))
