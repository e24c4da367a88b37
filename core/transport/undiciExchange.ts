/**
 * One request through undici's `Dispatcher.dispatch`, as its own handler, for either Effect line:
 * the response body collected straight from the socket's chunks, with no stream, no promise and no
 * `AbortController` (those are most of what `undici.request` costs beyond the bytes). One timer;
 * the timeout and a call-off both abort the request on the socket.
 *
 * Each line subclasses it with how an outcome reaches its caller (`succeed`, `fail`): a class
 * rather than closures or a handler object literal, because it lives as long as the request and V8
 * would pretenure such a literal under load (docs/architecture.md). undici's types are not imported:
 * the shapes below are the parts of them used here.
 */
import { isUtf8 } from "node:buffer"
import type { TransportFailure } from "../errors.js"
import { classify, type Route } from "./connectFailure.js"
import {
  type Bounds,
  describe,
  exceedsLimit,
  hasTimeout,
  neverConnected,
  timedOut,
  tooLargeDetail
} from "./failures.js"
import type { Received } from "./message.js"

/** What goes on the wire: the request's secrets revealed (only the line's wire code does that). */
export interface Outgoing {
  readonly origin: string
  readonly path: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: string | null
}

/** undici's controller of a dispatched request, as far as it is used. */
interface Controller {
  readonly abort: (reason: Error) => void
}

/** The dispatcher a request goes through: an undici `Agent`, a proxy's, or a test's. */
export interface Dispatching {
  dispatch(options: Outgoing, handler: Exchange): boolean
}

const flattenHeaders = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined) out[name] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

/** The headers of a response that has not started. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

export abstract class Exchange {
  private controller: Controller | undefined = undefined
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
    private readonly bounds: Bounds,
    /** Where the request goes, when known: a failure to get there is explained by it. */
    private readonly route: Route | undefined
  ) {}

  /** The response reached its caller. Called at most once, and never with `fail`. */
  protected abstract succeed(response: Received): void
  /** The request failed; `detail` may hold what the request carried: the line scrubs it. */
  protected abstract fail(reason: TransportFailure, detail: string, requestSent: false | undefined): void
  /** What goes on the wire to `origin` at `path`: the line reveals the request's secrets here, and only here. */
  protected abstract outgoing(origin: string, path: string): Outgoing

  /** Sends the request; returns the function that calls it off (then neither `succeed` nor `fail` is called). */
  start(agent: Dispatching, { origin, path }: { readonly origin: string; readonly path: string }): () => void {
    const bounds = this.bounds
    if (hasTimeout(bounds)) {
      this.timer = setTimeout(() => this.stop("Timeout", timedOut(bounds.timeoutMillis)), bounds.timeoutMillis)
    }
    try {
      agent.dispatch(this.outgoing(origin, path), this)
    } catch (cause) {
      this.failWith(cause)
    }
    return () => {
      this.settled = true
      if (this.timer !== undefined) clearTimeout(this.timer)
      this.abort(new Error("interrupted"))
    }
  }

  /** Ends the exchange once: false when it had ended already. */
  private end(): boolean {
    if (this.settled) return false
    this.settled = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.first = this.more = undefined
    return true
  }

  private answer(response: Received): void {
    if (this.end()) this.succeed(response)
  }

  private abort(reason: Error): void {
    if (this.controller !== undefined) this.controller.abort(reason)
    else this.abortReason = reason
  }

  private stop(reason: TransportFailure, detail: string): void {
    if (this.end()) this.fail(reason, detail, undefined)
    this.abort(new Error(reason))
  }

  onRequestStart(controller: Controller): void {
    this.controller = controller
    if (this.abortReason !== undefined) controller.abort(this.abortReason)
  }

  onResponseStart(
    _: Controller,
    statusCode: number,
    responseHeaders: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  ): void {
    this.status = statusCode
    this.headers = flattenHeaders(responseHeaders)
    // A redirect is answered as it is, its body unread: the request is aborted.
    if (statusCode >= 300 && statusCode <= 399) {
      this.answer({ status: statusCode, headers: this.headers, body: "", invalidUtf8: false })
      return this.abort(new Error("redirect"))
    }
    const limit = this.bounds.maxResponseBytes
    if (limit !== undefined && exceedsLimit(this.bounds, Number(this.headers["content-length"]))) {
      this.stop("ResponseTooLarge", tooLargeDetail(limit))
    }
  }

  onResponseData(_: Controller, chunk: Buffer): void {
    if (this.settled) return
    this.size += chunk.length
    const limit = this.bounds.maxResponseBytes
    if (limit !== undefined && this.size > limit) return this.stop("ResponseTooLarge", tooLargeDetail(limit))
    if (this.first === undefined) this.first = chunk
    else if (this.more === undefined) this.more = [this.first, chunk]
    else this.more.push(chunk)
  }

  onResponseEnd(): void {
    const bytes = this.more !== undefined ? Buffer.concat(this.more, this.size) : this.first
    this.answer(
      bytes === undefined
        ? { status: this.status, headers: this.headers, body: "", invalidUtf8: false }
        : { status: this.status, headers: this.headers, body: bytes.toString("utf8"), invalidUtf8: !isUtf8(bytes) }
    )
  }

  onResponseError(_: Controller, cause: Error): void {
    this.failWith(cause)
  }

  /** A failure of the request: what it means for its route when no response had started, else the network's. */
  private failWith(cause: unknown): void {
    if (!this.end()) return
    const classified = this.route === undefined || this.status !== 0 ? undefined : classify(cause, this.route)
    if (classified === undefined) {
      return this.fail("Network", describe(cause), neverConnected(cause) ? false : undefined)
    }
    const unsent = classified.requestSent === false || neverConnected(cause)
    this.fail(classified.reason, classified.detail, unsent ? false : undefined)
  }
}
