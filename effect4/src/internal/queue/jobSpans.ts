/**
 * Job spans (core/queue/jobSpan.ts) in this line's tracer: one per attempt, the call's spans its
 * children. None when the tracer is Effect's native one, which keeps its spans nowhere.
 */
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Tracer from "effect/Tracer"
import type { JobSpans } from "../../../../core/queue/jobProcessor.js"
import { endAttributes, endsInFailure, JOB_SPAN_NAME, startAttributes } from "../../../../core/queue/jobSpan.js"

/** Job spans in `context`'s tracer, or none. */
export const jobSpans = <R>(context: Context.Context<R>): JobSpans | undefined => {
  const run = Effect.runSyncWith(context)
  if (run(Effect.tracer) === Tracer.nativeTracer) return undefined
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
