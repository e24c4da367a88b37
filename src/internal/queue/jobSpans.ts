/**
 * Job spans (core/queue/jobSpan.ts) in this line's tracer: one per attempt, the call's spans its
 * children. None when the tracer is Effect's default one, which keeps its spans nowhere.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import type { JobSpans } from "../../../core/queue/jobProcessor.js"
import { endAttributes, endsInFailure, JOB_SPAN_NAME, startAttributes } from "../../../core/queue/jobSpan.js"

/** Effect's default tracer, the one a runtime has when the application installed none. */
const defaultTracer = Effect.runSync(Effect.tracer)

/** Job spans in `runtime`'s tracer, or none. */
export const jobSpans = <R>(runtime: Runtime.Runtime<R>): JobSpans | undefined => {
  const run = Runtime.runSync(runtime)
  if (run(Effect.tracer) === defaultTracer) return undefined
  return (start) => {
    const span = run(
      Effect.makeSpan(JOB_SPAN_NAME, { kind: "consumer", root: true, attributes: startAttributes(start) })
    )
    return {
      parent: span,
      end: (outcome, kind) => {
        for (const [key, value] of Object.entries(endAttributes(outcome, kind))) span.attribute(key, value)
        span.end(run(Clock.currentTimeNanos), endsInFailure(outcome) ? Exit.fail(outcome) : Exit.void)
      }
    }
  }
}
