/**
 * One HTTP attempt, observed as OpenTelemetry's HTTP client conventions say: a CLIENT span per
 * attempt (a child of the call's span) named after the method, with `http.request.method`,
 * `server.address`, `server.port`, `url.full`, `http.response.status_code`, `error.type` and, on a
 * resend, `http.request.resend_count`; ended as an error for a status of 400 or more; and the
 * `http.client.request.duration` histogram. The same for every transport: it is recorded around the
 * transport, by the Effect path (`attempt`) and by the call's common path (`startIn`) alike.
 *
 * Our URLs carry no patient data (a PersonUid travels in the body), so `url.full` is safe to
 * record; keep it so. No header, body or query is recorded.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import * as HttpAttempt from "../../../core/observability/httpAttempt.js"
import type { TransportError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import { secretBodyOf, SecretBodyRequest } from "../call/secretText.js"
import * as FiberSpan from "./fiberSpan.js"
import * as MetricUpdater from "./metricUpdater.js"
import * as Telemetry from "./telemetry.js"

type Server = HttpAttempt.MeteredServer<MetricUpdater.Updater>

/** The servers called, and their duration histograms (see the core's). */
const servers = new HttpAttempt.MeteredServers((attributes) =>
  MetricUpdater.updater(
    MetricKey.taggedWithLabels(
      Telemetry.httpClientRequestDurationKey,
      Object.entries(attributes).map(([key, value]) => MetricLabel.make(key, value))
    )
  )
)

const serverOf = (url: string): Server => servers.of(url)

/** How an attempt ended: the transport's outcome, interrupted, or a defect (`_OTHER`, as the conventions say). */
export type Ending = Either.Either<HttpTransport.TransportResponse, TransportError> | "interrupted" | "_OTHER"

/** `error.type` of an attempt: the status of an HTTP error, or the transport's reason. */
const errorTypeOf = (ending: Ending): string | undefined => {
  if (typeof ending === "string") return ending
  if (Either.isLeft(ending)) return ending.left.reason
  return HttpAttempt.errorTypeOfStatus(ending.right.status)
}

const durationOf = (method: string, server: Server, status: number | undefined, error: string | undefined) =>
  servers.durationOf(server, method, status, error)

/**
 * An attempt under way: the request to send (with its `traceparent` when asked), and how to end
 * it. A class, not an object literal, as every object made per call (see `authorizedPost`). Its
 * span is `undefined` when no one could see it (see `FiberSpan.observed`); the duration is
 * recorded either way.
 */
export class Attempt {
  readonly request: HttpTransport.TransportRequest
  private readonly started = performance.now()
  constructor(
    private readonly span: Tracer.Span | undefined,
    request: HttpTransport.TransportRequest,
    private readonly server: Server,
    propagate: boolean
  ) {
    const traceparent = propagate && span !== undefined ? HttpAttempt.traceparentOf(span) : undefined
    this.request = traceparent === undefined ? request : withTraceparent(request, traceparent)
  }

  /** Records how the attempt ended, at the fiber's time, with its metric labels. */
  end(ending: Ending, fiber: FiberSpan.AnyFiber): void {
    const status = typeof ending !== "string" && Either.isRight(ending) ? ending.right.status : undefined
    const error = errorTypeOf(ending)
    const span = this.span
    if (span !== undefined) {
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("error.type", error)
      FiberSpan.end(fiber, span, error === undefined ? Exit.void : Exit.fail(error))
    }
    durationOf(this.request.method, this.server, status, error)(
      (performance.now() - this.started) / 1000,
      fiber.getFiberRef(FiberRef.currentMetricLabels)
    )
  }
}

/** `request` with a `traceparent` header added; its body, secret or not, is the request's own. */
class WithTraceparent extends SecretBodyRequest implements HttpTransport.TransportRequest {
  readonly method: HttpTransport.TransportRequest["method"]
  readonly url: string
  readonly headers: Readonly<Record<string, HttpTransport.WireValue>>
  readonly maxResponseBytes: number | undefined
  readonly timeoutMillis: number | undefined
  constructor(original: HttpTransport.TransportRequest, traceparent: string) {
    const secret = secretBodyOf(original)
    super(secret, secret === undefined ? original.body : undefined)
    this.method = original.method
    this.url = original.url
    this.headers = { ...original.headers, traceparent }
    this.maxResponseBytes = original.maxResponseBytes
    this.timeoutMillis = original.timeoutMillis
  }
}

const withTraceparent = (request: HttpTransport.TransportRequest, value: string): HttpTransport.TransportRequest =>
  new WithTraceparent(request, value)

const attributesOf = (request: HttpTransport.TransportRequest, server: Server, resendCount: number) =>
  HttpAttempt.attributesOf(request.method, request.url, server, resendCount)

/**
 * Starts an attempt of `request` from within `fiber`, with no Effect: its span, a child of `parent`
 * (only where `FiberSpan.canMake` holds), unless the call is not `traced`. `resendCount` is how
 * many times this call's request was sent before (0 for the first attempt). With `propagate`, the
 * request carries the attempt's `traceparent`.
 */
export const startIn = (
  fiber: FiberSpan.AnyFiber,
  parent: Tracer.AnySpan | undefined,
  request: HttpTransport.TransportRequest,
  resendCount: number,
  propagate: boolean,
  traced: boolean
): Attempt => {
  const server = serverOf(request.url)
  const span = traced
    ? FiberSpan.make(fiber, request.method, "client", attributesOf(request, server, resendCount), parent)
    : undefined
  return new Attempt(span, request, server, propagate)
}

/** Starts an attempt of `request`, as an Effect, a child of the current span (see {@link startIn}). */
export const start = (
  request: HttpTransport.TransportRequest,
  resendCount: number,
  propagate: boolean,
  traced: boolean
): Effect.Effect<Attempt> => {
  const server = serverOf(request.url)
  if (!traced) return Effect.succeed(new Attempt(undefined, request, server, propagate))
  return Effect.map(
    Effect.makeSpan(request.method, {
      kind: "client",
      attributes: attributesOf(request, server, resendCount),
      captureStackTrace: false
    }),
    (span) => new Attempt(span, request, server, propagate)
  )
}

const endingOf = (exit: Exit.Exit<HttpTransport.TransportResponse, TransportError>): Ending =>
  Exit.isSuccess(exit)
    ? Either.right(exit.value)
    : exit.cause._tag === "Fail"
    ? Either.left(exit.cause.error)
    : Cause.isInterruptedOnly(exit.cause)
    ? "interrupted"
    : "_OTHER"

/** `send` observed as one attempt of `request` (see {@link start}). */
export const attempt = (
  request: HttpTransport.TransportRequest,
  resendCount: number,
  propagate: boolean,
  send: (request: HttpTransport.TransportRequest) => Effect.Effect<HttpTransport.TransportResponse, TransportError>,
  traced = true
): Effect.Effect<HttpTransport.TransportResponse, TransportError> =>
  Effect.flatMap(
    start(request, resendCount, propagate, traced),
    (attempt) =>
      Effect.onExit(send(attempt.request), (exit) =>
        Effect.withFiberRuntime<void>((fiber) => {
          attempt.end(endingOf(exit), fiber)
          return Effect.void
        }))
  )
