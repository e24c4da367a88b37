/** The `@effect/platform` HttpClient adapter: any HttpClient the application provides (fetch, node, ...). */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { constTrue } from "effect/Function"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describeWrapped } from "../../../core/transport/failures.js"
import {
  followedRedirect,
  hasNoBody,
  NO_BYTES,
  plainLength,
  PlatformResponse
} from "../../../core/transport/platformResponse.js"
import type { TransportError } from "../../ClinicalError.js"
import type { Service, TransportRequest, TransportResponse } from "./port.js"
import {
  hasTimeout,
  invalidArgument,
  networkError,
  sendableBody,
  timedOutError,
  tooLarge,
  transportError,
  wireHeader,
  wireHeaders
} from "./wire.js"

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
  if (hasNoBody(request.method, response.status)) return Effect.succeed(NO_BYTES)
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
        networkError(request, `${error._tag} (${error.reason}): ${describeWrapped(error.cause ?? error)}`, error)
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
