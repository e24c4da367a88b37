/**
 * One HTTP attempt, observed as OpenTelemetry's HTTP client conventions say (the names and
 * attributes are the core's, core/observability/httpAttempt.ts): a CLIENT span per attempt, a
 * child of the call's span, named after the method; ended as an error for a status of 400 or more
 * or a transport failure; and the `http.client.request.duration` histogram.
 */
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Result from "effect/Result"
import * as Tracer from "effect/Tracer"
import * as HttpAttempt from "../../../../core/observability/httpAttempt.js"
import type { TransportError } from "../../ClinicalError.js"
import type { TransportRequest, TransportResponse } from "../transport/wire.js"
import * as Telemetry from "./telemetry.js"

/** The servers called, and their duration histograms (see the core's). */
const servers = new HttpAttempt.MeteredServers((attributes) =>
  Metric.withAttributes(Telemetry.httpClientRequestDuration, attributes)
)

type Server = ReturnType<typeof servers.of>

const serverOf = (url: string): Server => servers.of(url)

const durationOf = (server: Server, method: string, status: number | undefined, error: string | undefined) =>
  servers.durationOf(server, method, status, error)

/**
 * Whether spans made in `fiber` can be seen by anyone: not when its tracer is Effect's native one
 * (which keeps its spans nowhere) or tracing is off, unless `propagating` (the request carries the
 * attempt span's ids in its `traceparent`). A call no one could see makes no span at all: two per
 * call were a fifth of its CPU.
 */
export const observed = (fiber: Fiber.Fiber<unknown, unknown>, propagating: boolean): boolean =>
  propagating ||
  (fiber.cache.tracerEnabled && fiber.cache.tracer !== undefined && fiber.cache.tracer !== Tracer.nativeTracer)

/**
 * The duration of an attempt that made no span (the call's common path), recorded with no Effect:
 * `outcome` the transport's, or "interrupted"; `elapsedNanos` since the request went.
 */
export const recordUnsafe = (
  request: TransportRequest,
  outcome: Result.Result<TransportResponse, TransportError> | "interrupted",
  elapsedNanos: bigint,
  context: Context.Context<never>
): void => {
  const status = outcome !== "interrupted" && Result.isSuccess(outcome) ? outcome.success.status : undefined
  const error = outcome === "interrupted"
    ? outcome
    : Result.isSuccess(outcome)
    ? HttpAttempt.errorTypeOfStatus(outcome.success.status)
    : outcome.failure.reason
  durationOf(serverOf(request.url), request.method, status, error).updateUnsafe(Number(elapsedNanos) / 1e9, context)
}

/** `error.type` of an attempt's end: a status from 400, the transport's reason, interrupted, or `_OTHER`. */
const errorTypeOf = (exit: Exit.Exit<TransportResponse, TransportError>): string | undefined => {
  if (Exit.isSuccess(exit)) return HttpAttempt.errorTypeOfStatus(exit.value.status)
  const failure = exit.cause.reasons.find(Cause.isFailReason)
  if (failure !== undefined) return failure.error.reason
  return Cause.hasInterruptsOnly(exit.cause) ? "interrupted" : "_OTHER"
}

/** `request` with a `traceparent` header added. */
const withTraceparent = (request: TransportRequest, traceparent: string): TransportRequest => ({
  ...request,
  headers: { ...request.headers, traceparent }
})

/**
 * `send` observed as one attempt of `request`; `resendCount`: how many times the call's request
 * went before. With `propagate`, the request carries the attempt's `traceparent`; with `traced`
 * false (nobody could see it), no span is made, and the duration is recorded all the same.
 */
export const attempt = (
  request: TransportRequest,
  resendCount: number,
  propagate: boolean,
  send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>,
  traced = true
): Effect.Effect<TransportResponse, TransportError> =>
  Effect.clockWith((clock) => {
    const server = serverOf(request.url)
    const started = clock.currentTimeNanosUnsafe()
    const ended = (exit: Exit.Exit<TransportResponse, TransportError>) => {
      const status = Exit.isSuccess(exit) ? exit.value.status : undefined
      const error = errorTypeOf(exit)
      const seconds = Number(clock.currentTimeNanosUnsafe() - started) / 1e9
      return {
        status,
        error,
        record: Metric.update(durationOf(server, request.method, status, error), seconds)
      }
    }
    if (!traced) return Effect.onExit(send(request), (exit) => ended(exit).record)
    return Effect.flatMap(
      Effect.makeSpan(request.method, {
        kind: "client",
        attributes: HttpAttempt.attributesOf(request.method, request.url, server, resendCount)
      }),
      (span) => {
        const traceparent = propagate ? HttpAttempt.traceparentOf(span) : undefined
        const sent = traceparent === undefined ? request : withTraceparent(request, traceparent)
        return Effect.onExit(Effect.withParentSpan(send(sent), span), (exit) => {
          const { error, record, status } = ended(exit)
          if (status !== undefined) span.attribute("http.response.status_code", status)
          if (error !== undefined) span.attribute("error.type", error)
          span.end(clock.currentTimeNanosUnsafe(), error === undefined ? Exit.void : Exit.fail(error))
          return record
        })
      }
    )
  })
