/**
 * The `effect/http` HttpClient adapter: any HttpClient the application provides (fetch, node, ...).
 * What it decides is the core's (core/transport/platformResponse.ts), as the Effect 3 line's
 * adapter over `@effect/platform` decides it.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpBody from "effect/http/HttpBody"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientError from "effect/http/HttpClientError"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describeWrapped, hasTimeout, neverConnected } from "../../../../core/transport/failures.js"
import {
  followedRedirect,
  hasNoBody,
  NO_BYTES,
  plainLength,
  PlatformResponse
} from "../../../../core/transport/platformResponse.js"
import type { TransportError } from "../../ClinicalError.js"
import {
  invalidArgument,
  sendableBody,
  timedOutError,
  tooLarge,
  transportError,
  type TransportRequest,
  type TransportResponse,
  wireHeader,
  wireHeaders
} from "./wire.js"

/** What a transport is (the port of `HttpTransport`). */
interface Send {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
}

/**
 * Reads a platform response body, never holding more than the request allows: a body sent as it is
 * with a declared length is read whole within the limit and refused at once beyond it; any other
 * (chunked, or decoded by the client) is counted while it streams, and the read stops at the limit.
 */
const readPlatformBody = (
  request: TransportRequest,
  response: HttpClientResponse.HttpClientResponse,
  network: (error: HttpClientError.HttpClientError) => TransportError
): Effect.Effect<Uint8Array, TransportError> => {
  if (hasNoBody(request.method, response.status)) return Effect.succeed(NO_BYTES)
  const whole = Effect.map(Effect.mapError(response.arrayBuffer, network), (buffer) => new Uint8Array(buffer))
  const limit = request.maxResponseBytes
  if (limit === undefined) return whole
  const declared = plainLength(response.headers)
  if (declared !== undefined) return declared > limit ? Effect.fail(tooLarge(request, limit)) : whole
  return response.stream.pipe(
    Stream.runFoldEffect(() => ({ chunks: [] as Array<Uint8Array>, size: 0 }), (read, chunk) => {
      read.size += chunk.length
      read.chunks.push(chunk)
      return read.size > limit ? Effect.fail(tooLarge(request, limit)) : Effect.succeed(read)
    }),
    Effect.map((read): Uint8Array => Buffer.concat(read.chunks, read.size)),
    Effect.catch((error): Effect.Effect<Uint8Array, TransportError> =>
      error._tag === "TransportError"
        ? Effect.fail(error)
        : error.reason._tag === "EmptyBodyError"
        ? Effect.succeed(NO_BYTES)
        : Effect.fail(network(error))
    )
  )
}

/**
 * A transport over any `effect/http` HttpClient: redirects never followed (fetch told `redirect:
 * "manual"` on top of the application's `RequestInit`; a response to a request that is not ours
 * refused as `Redirected`), each request under a scope of its own (closing it aborts the request on
 * the socket), and the platform's own span off (the client records one per attempt itself, and the
 * platform's would record every header).
 */
export const fromHttpClient = (client: HttpClient.HttpClient, requestInit: globalThis.RequestInit = {}): Send => {
  if (!HttpClient.isHttpClient(client)) throw invalidArgument("client", "must be an effect/http HttpClient")
  const scoped = HttpClient.withScope(client)
  const direct: globalThis.RequestInit = { ...requestInit, redirect: "manual" }
  const initFor = (context: Context.Context<never>): globalThis.RequestInit => {
    const given = Context.getOrUndefined(context, FetchHttpClient.RequestInit)
    return given === undefined ? direct : { ...requestInit, ...given, redirect: "manual" }
  }
  return {
    send: (request) => {
      const body = sendableBody(request)
      const httpRequest = HttpClientRequest.make(request.method)(request.url, {
        headers: wireHeaders(request),
        ...(body === undefined ? {} : { body: HttpBody.text(body, wireHeader(request, "content-type")) })
      })
      const network = (error: HttpClientError.HttpClientError) => {
        const cause = error.reason.cause ?? error
        // A connection never made (refused, no such host) is a request that surely never went.
        return transportError(
          request,
          "Network",
          `${error.reason._tag}: ${describeWrapped(cause)}`,
          neverConnected(cause) ? false : undefined
        )
      }
      return Effect.flatMap(Scope.make(), (scope) => {
        const abort = Scope.close(scope, Exit.void)
        const exchange = Effect.flatMap(
          Effect.mapError(scoped.execute(httpRequest), network),
          (response): Effect.Effect<TransportResponse, TransportError> => {
            if (response.request.url !== httpRequest.url) {
              return Effect.fail(transportError(request, "Redirected", followedRedirect(response.request.url)))
            }
            const answer = (bytes: Uint8Array): TransportResponse =>
              new PlatformResponse(response.status, { ...response.headers }, bytes)
            // A redirect is answered as it is, its body unread (and its request aborted).
            if (response.status >= 300 && response.status <= 399) return Effect.as(abort, answer(NO_BYTES))
            return Effect.map(readPlatformBody(request, response, network), answer)
          }
        )
        const configured = exchange.pipe(
          Effect.updateContext((context: Context.Context<never>) =>
            Context.merge(
              context,
              Context.make(Scope.Scope, scope).pipe(Context.add(FetchHttpClient.RequestInit, initFor(context)))
            )
          ),
          Effect.provideService(HttpClient.TracerDisabledWhen, () => true)
        )
        return bounded(request, scope, abort, configured)
      })
    }
  }
}

/**
 * Ends a platform exchange: a body read whole leaves the connection to the pool; anything else (a
 * failure, a refused body, an interruption) closes the request's scope, which aborts it. The
 * request's timeout closes the scope too, and the failure that follows is reported as `Timeout`.
 */
const bounded = (
  request: TransportRequest,
  scope: Scope.Closeable,
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
        return Effect.andThen(abort, Effect.failCause(timedOut ? Cause.fail(timedOutError(request)) : cause))
      },
      onSuccess: (response) => {
        if (timer !== undefined) clearTimeout(timer)
        return Effect.succeed(response)
      }
    })
  })
