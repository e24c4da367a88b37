/** A tracer that keeps every span it starts (delegating to Effect's own), for asserting on attributes. */
import { Effect, Tracer } from "effect"

export const make = Effect.map(Effect.tracer, (native) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span: (...args) => {
      const span = native.span(...args)
      spans.push(span)
      return span
    },
    context: native.context
  })
  return { spans, tracer }
})
