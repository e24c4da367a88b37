/**
 * The common path of a data call on Effect 3 (see `authorizedPost`, whose runner it is part of):
 * the whole of a call that goes well, with no Effect run between its steps.
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Tracer from "effect/Tracer"
import type { Action, CallMachine } from "../../../core/call/callMachine.js"
import type { Decision } from "../../../core/call/callRunner.js"
import type * as Gate from "../../../core/call/gate.js"
import { Failed } from "../../../core/call/response.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import { fromCore } from "../fromCore.js"
import * as FiberSpan from "../observability/fiberSpan.js"
import * as HttpSpan from "../observability/httpSpan.js"
import { labelled } from "./attempt.js"
import type { AnyCall, Call } from "./call.js"
import { callback } from "./callback.js"

/** One call's machine on this line. */
export type Machine = CallMachine<TokenService.AccessToken, ClinicalError, Clock.Clock>

/** What the common path needs of the call's runner. */
export interface Runner {
  readonly gate: Gate.Gate
  readonly tracePropagation: boolean
  /** Where the call's attempts and attributes go. */
  spanOf(fiber: FiberSpan.AnyFiber, call: AnyCall): Tracer.AnySpan | undefined
  request(call: AnyCall, token: TokenService.AccessToken, timeoutMillis: number): HttpTransport.TransportRequest
  /** A response read into its JSON, or the core's failure it stands for. */
  read(call: AnyCall, used: TokenService.AccessToken, response: HttpTransport.TransportResponse, now: number): unknown
  finished<A>(fiber: FiberSpan.AnyFiber, call: Call<A>, m: Machine): Either.Either<A, ClinicalError>
  /** The Effect path from the next action after an event that may retry. */
  decided<A>(call: Call<A>, m: Machine, decide: Decision): Effect.Effect<A, ClinicalError>
  /** The Effect path from an attempt's action. */
  attempt<A>(call: Call<A>, m: Machine, action: Action): Effect.Effect<A, ClinicalError>
  /** The Effect path under the call's span, which it ends. */
  onEffectPath<A>(
    fiber: FiberSpan.AnyFiber,
    call: Call<A>,
    effect: Effect.Effect<A, ClinicalError>
  ): Effect.Effect<A, ClinicalError>
}

/**
 * The end of a common-path call whose callback threw (a caller's Schema, a tracer's span): it
 * dies with the thrown value, as on the Effect path, rather than the throw going up into the gate
 * or the transport and the call never ending. Its turn is given back by the caller.
 */
const died = <A>(
  fiber: FiberSpan.AnyFiber,
  call: Call<A>,
  resume: (effect: Effect.Effect<A, ClinicalError>) => void,
  defect: unknown
): void => {
  try {
    if (call.span !== undefined) FiberSpan.end(fiber, call.span, Exit.die(defect))
  } catch {
    // The tracer threw again: the call ends all the same.
  }
  resume(Effect.die(defect))
}

/**
 * The call's common path, with no fiber suspended but for the wait on the socket: the turn taken
 * (or waited for) in a callback, the request dispatched and its answer read in the transport's
 * own callback. Whatever the machine answers then but `Send` and `Finish` (the circuit opened
 * meanwhile, the deadline passed, a failure, an answer that does not read) goes on on the Effect
 * path from exactly the point reached. Only a transport that offers `dispatch` has this path.
 */
export const commonPath = <A>(
  runner: Runner,
  fiber: FiberSpan.AnyFiber,
  call: Call<A>,
  m: Machine,
  send: NonNullable<HttpTransport.Service["dispatch"]>,
  clock: Clock.Clock
): Effect.Effect<A, ClinicalError> => {
  const gate = runner.gate
  return callback<A, ClinicalError>((resume) => {
    let holding = false
    // The request in flight: its attempt, and how to call it off (two variables, no object per call).
    let attempt: HttpSpan.Attempt | undefined
    let cancel: (() => void) | undefined
    const leave = () => {
      if (holding) {
        holding = false
        gate.leave()
      }
    }
    const goOn = (decide: Decision) => resume(runner.onEffectPath(fiber, call, runner.decided(call, m, decide)))
    const withdraw = gate.take(() => {
      holding = true
      try {
        const action = m.turnGiven(clock.unsafeCurrentTimeMillis())
        if (action !== "Send") {
          leave()
          return resume(runner.onEffectPath(fiber, call, runner.attempt(call, m, action)))
        }
        const token = m.token!
        const started = HttpSpan.startIn(
          fiber,
          runner.spanOf(fiber, call),
          runner.request(call, token, m.waitMillis),
          0,
          runner.tracePropagation,
          call.traced
        )
        attempt = started
        const calledOff = send(started.request, (outcome) => {
          // Once only, and never after the call was called off (a transport of the application's
          // own may call back late or twice).
          if (!holding) return
          cancel = undefined
          try {
            if (Either.isLeft(outcome)) m.sendFailed(labelled(outcome.left, call.operation, call.secrets()))
            else m.replied(outcome.right.status)
            leave()
            started.end(outcome, fiber)
            if (Either.isLeft(outcome)) return goOn((now, random) => m.afterFailure(now, random))
            const response = outcome.right
            const json = runner.read(call, token, response, clock.unsafeCurrentTimeMillis())
            if (json instanceof Failed) {
              return goOn((now, random) => m.answeredWith(response.status, fromCore(json.error), now, random))
            }
            // The call ends here: what it makes of the answer, recorded, its span ended.
            m.answered(response.status, json)
            const out = runner.finished(fiber, call, m)
            if (call.span !== undefined) {
              FiberSpan.end(fiber, call.span, Either.isRight(out) ? Exit.void : Exit.fail(out.left))
            }
            resume(out)
          } catch (defect) {
            leave()
            died(fiber, call, resume, defect)
          }
        })
        // (Answered already, synchronously: nothing is left to call off.)
        if (holding) cancel = calledOff
      } catch (defect) {
        leave()
        died(fiber, call, resume, defect)
      }
    })
    // Interrupted: out of the queue, or the request aborted on the socket and the turn given back.
    return () => {
      if (withdraw() && holding) {
        // The request aborted before its turn goes on: at most the bound is ever out at once.
        holding = false
        if (cancel !== undefined) {
          cancel()
          attempt!.end("interrupted", fiber)
        }
        gate.leave()
      }
      m.interrupted()
      // (Once the call went on on the Effect path, that path ended the span: this does nothing.)
      if (call.span !== undefined) FiberSpan.end(fiber, call.span, Exit.interrupt(fiber.id()))
    }
  })
}
