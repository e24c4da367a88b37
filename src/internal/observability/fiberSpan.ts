/**
 * Spans made from a fiber's tracer without running an Effect, as `Effect.makeSpan` makes them (the
 * fiber's tracer, parent span, span annotations and links, and timing setting), and without making
 * them current: `Effect.withSpan` changes the fiber's context for the span's children, which costs
 * a context copy per call. The call's common path starts its spans this way, in callbacks, and
 * hands the call's span on explicitly.
 *
 * With no tracer installed, a call makes no span at all ({@link observed}): Effect's default
 * tracer keeps its spans nowhere (no exporter, no reader outside the call), and making two per call
 * cost a quarter of the call's CPU in memory.
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

/** A fiber, whatever it computes. */
export type AnyFiber = Fiber.RuntimeFiber<unknown, unknown>

/** Effect's default tracer, the one a fiber has when the application installed none. */
const defaultTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

/**
 * Whether spans made in `fiber` can be seen by anyone: false when its tracer is Effect's default
 * one, which exports them nowhere, unless `propagating` (the request carries the attempt span's
 * ids in its `traceparent`). Anything else (OpenTelemetry's tracer, a test's, Effect's DevTools,
 * the default one wrapped) is a tracer someone reads, and gets every span.
 */
export const observed = (fiber: AnyFiber, propagating: boolean): boolean =>
  propagating || fiber.currentTracer !== defaultTracer

/**
 * Whether {@link make} can make a span in `fiber` as `Effect.makeSpan` would: not when tracing is
 * off, or the parent span asks for none below it (then use `Effect.makeSpan` / `Effect.withSpan`).
 */
export const canMake = (fiber: AnyFiber, parent: Tracer.AnySpan | undefined = fiber.currentSpan): boolean =>
  fiber.getFiberRef(FiberRef.currentTracerEnabled) &&
  (parent === undefined || !Context.get(parent.context, Tracer.DisablePropagation))

const nowNanos = (fiber: AnyFiber): bigint =>
  fiber.getFiberRef(FiberRef.currentTracerTimingEnabled)
    ? Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeNanos()
    : BigInt(0)

/** A span named `name`, a child of `parent` (default: the fiber's current span), with `attributes`. */
export const make = (
  fiber: AnyFiber,
  name: string,
  kind: Tracer.SpanKind,
  attributes: Readonly<Record<string, unknown>>,
  parent: Tracer.AnySpan | undefined = fiber.currentSpan
): Tracer.Span => {
  const span = fiber.currentTracer.span(
    name,
    Option.fromNullable(parent),
    Context.empty(),
    Chunk.toReadonlyArray(fiber.getFiberRef(FiberRef.currentTracerSpanLinks)),
    nowNanos(fiber),
    kind,
    { kind, captureStackTrace: false }
  )
  HashMap.forEach(fiber.getFiberRef(FiberRef.currentTracerSpanAnnotations), (value, key) => span.attribute(key, value))
  for (const key in attributes) span.attribute(key, attributes[key])
  return span
}

/**
 * Ends `span` with `exit`, at the fiber's time (unless the fiber's tracer timing is off). A success
 * is recorded as `Exit.void`: a span needs to know that the call succeeded, not its value, and a
 * span that held the value would keep the whole answer alive as long as the span lives.
 */
export const end = (fiber: AnyFiber, span: Tracer.Span, exit: Exit.Exit<unknown, unknown>): void => {
  if (span.status._tag !== "Ended") span.end(nowNanos(fiber), exit._tag === "Success" ? Exit.void : exit)
}
