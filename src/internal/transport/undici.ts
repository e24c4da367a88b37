/** The undici adapter: one request through `Dispatcher.dispatch`, its body collected from the socket's chunks. */
import * as Either from "effect/Either"
import { isUtf8 } from "node:buffer"
import type { Dispatcher } from "undici"
import { classify, type Route } from "../../../core/transport/connectFailure.js"
import { splitUrl } from "../../../core/url.js"
import type { TransportError } from "../../ClinicalError.js"
import { callback } from "../call/callback.js"
import type { Network } from "./network.js"
import type { Service, TransportRequest, TransportResponse } from "./port.js"
import {
  describe,
  exceedsLimit,
  hasTimeout,
  networkError,
  neverConnected,
  sendableBody,
  timedOutError,
  tooLarge,
  transportError,
  wireHeaders
} from "./wire.js"

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
    private readonly done: (outcome: Either.Either<TransportResponse, TransportError>) => void,
    /** Where the request goes, when known: a failure to get there is explained by it. */
    private readonly route: Route | undefined
  ) {}

  /** Sends the request; returns the function that calls it off (then `done` is not called). */
  start(
    agent: Pick<Dispatcher, "dispatch">,
    { origin, path }: { readonly origin: string; readonly path: string } = splitUrl(this.request.url)
  ): () => void {
    const request = this.request
    if (hasTimeout(request)) this.timer = setTimeout(() => this.stop(timedOutError(request)), request.timeoutMillis)
    try {
      agent.dispatch({
        origin,
        path,
        method: request.method,
        headers: wireHeaders(request),
        body: sendableBody(request) ?? null
      }, this)
    } catch (cause) {
      this.settle(Either.left(this.failure(cause)))
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
    this.settle(Either.left(this.failure(cause)))
  }

  /** A failure of the request: what it means for its route when no response had started, else the network's. */
  private failure(cause: unknown): TransportError {
    const classified = this.route === undefined || this.status !== 0 ? undefined : classify(cause, this.route)
    if (classified === undefined) return networkError(this.request, describe(cause), cause)
    const unsent = classified.requestSent === false || neverConnected(cause)
    return transportError(this.request, classified.reason, classified.detail, unsent ? false : undefined)
  }
}

/** The headers of a response that has not started. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** A transport over `dispatch`, the callback form of a request. */
const fromDispatch = (dispatch: NonNullable<Service["dispatch"]>): Service => ({
  dispatch,
  // Interruption stops the timer and aborts the request on the socket.
  send: (request) => callback<TransportResponse, TransportError>((resume) => dispatch(request, resume))
})

/** A transport over an undici dispatcher: every request an {@link UndiciExchange}. */
export const fromUndiciAgent = (agent: Pick<Dispatcher, "dispatch">): Service =>
  fromDispatch((request, done) => new UndiciExchange(request, done, undefined).start(agent))

/**
 * A transport over a {@link Network}'s dispatchers: each request through its origin's (direct, or
 * a proxy's tunnel), and a failure to get there explained by the route (see `connectFailure`).
 */
export const fromNetwork = (network: Network): Service =>
  fromDispatch((request, done) => {
    const split = splitUrl(request.url)
    const { dispatcher, route } = network.routeOf(split.origin)
    return new UndiciExchange(request, done, route).start(dispatcher, split)
  })
