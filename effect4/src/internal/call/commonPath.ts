/**
 * The common path of a data call on Effect 4 (see `authorizedPost`, whose runner it is part of):
 * the whole of a call that goes well, with no Effect run between its steps.
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type { Action, CallMachine } from "../../../../core/call/callMachine.js"
import type { Decision } from "../../../../core/call/callRunner.js"
import type * as Gate from "../../../../core/call/gate.js"
import { Failed } from "../../../../core/call/response.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type * as TokenService from "../../TokenService.js"
import { fromCore } from "../fromCore.js"
import * as HttpSpan from "../observability/httpSpan.js"
import type { Dispatch } from "../transport/undici.js"
import { labelled } from "../transport/wire.js"
import type { AnyCall, Call } from "./call.js"

/** One call's machine on this line. */
export type Machine = CallMachine<TokenService.AccessToken, ClinicalError, Clock.Clock>

/** A fiber, whatever it computes. */
export type AnyFiber = Fiber.Fiber<unknown, unknown>

/** A call's end as an Effect. */
export const asEffect = <A>(out: Result.Result<A, ClinicalError>): Effect.Effect<A, ClinicalError> =>
  Result.isSuccess(out) ? Effect.succeed(out.success) : Effect.fail(out.failure)

/** What the common path needs of the call's runner. */
export interface Runner {
  readonly gate: Gate.Gate
  request(call: AnyCall, token: TokenService.AccessToken, timeoutMillis: number): HttpTransport.TransportRequest
  /** A response read into its JSON, or the error it stands for (as the core has it). */
  read(call: AnyCall, used: TokenService.AccessToken, response: HttpTransport.TransportResponse, now: number): unknown
  finished<A>(fiber: AnyFiber, call: Call<A>, m: Machine): Result.Result<A, ClinicalError>
  /** The Effect path from the next action after an event that may retry. */
  decided<A>(call: Call<A>, m: Machine, decide: Decision): Effect.Effect<A, ClinicalError>
  /** The Effect path from an attempt's action. */
  attempt<A>(call: Call<A>, m: Machine, action: Action): Effect.Effect<A, ClinicalError>
}

/**
 * The call's common path, with no fiber suspended but for the wait on the socket: the turn taken
 * (or waited for) in a callback, the request dispatched and its answer read in the transport's
 * own callback. Whatever the machine answers then but `Send` and `Finish` goes on on the Effect
 * path from exactly the point reached. A callback that throws (a caller's `finish`, say) ends the
 * call as a defect, as on the Effect path, its turn given back.
 */
export const commonPath = <A>(
  runner: Runner,
  fiber: AnyFiber,
  call: Call<A>,
  m: Machine,
  send: Dispatch,
  clock: Clock.Clock
): Effect.Effect<A, ClinicalError> => {
  const gate = runner.gate
  return Effect.callback<A, ClinicalError>((resume) => {
    let holding = false
    // The request in flight, and how to call it off (variables, no object per call).
    let cancel: (() => void) | undefined
    let request: HttpTransport.TransportRequest | undefined
    let startedNanos = BigInt(0)
    const leave = () => {
      if (holding) {
        holding = false
        gate.leave()
      }
    }
    const goOn = (decide: Decision) => resume(runner.decided(call, m, decide))
    const withdraw = gate.take(() => {
      holding = true
      try {
        const action = m.turnGiven(clock.currentTimeMillisUnsafe())
        if (action !== "Send") {
          leave()
          return resume(runner.attempt(call, m, action))
        }
        const token = m.token!
        const sent = request = runner.request(call, token, m.waitMillis)
        startedNanos = clock.currentTimeNanosUnsafe()
        const calledOff = send(sent, (outcome) => {
          // Once only, and never after the call was called off (a transport of the application's
          // own may call back late or twice).
          if (!holding) return
          cancel = undefined
          try {
            HttpSpan.recordUnsafe(sent, outcome, clock.currentTimeNanosUnsafe() - startedNanos, fiber.context)
            if (Result.isFailure(outcome)) {
              m.sendFailed(labelled(outcome.failure, call.operation, call.secrets()))
              leave()
              return goOn((now, random) => m.afterFailure(now, random))
            }
            const response = outcome.success
            m.replied(response.status)
            leave()
            const read = runner.read(call, token, response, clock.currentTimeMillisUnsafe())
            if (read instanceof Failed) {
              return goOn((now, random) => m.answeredWith(response.status, fromCore(read.error), now, random))
            }
            m.answered(response.status, read)
            resume(asEffect(runner.finished(fiber, call, m)))
          } catch (defect) {
            leave()
            resume(Effect.die(defect))
          }
        })
        // (Answered already, synchronously: nothing is left to call off.)
        if (holding) cancel = calledOff
      } catch (defect) {
        leave()
        resume(Effect.die(defect))
      }
    })
    // Interrupted: out of the queue, or the request aborted on the socket and the turn given back.
    return Effect.sync(() => {
      if (withdraw() && holding) {
        // The request aborted before its turn goes on: at most the bound is ever out at once.
        const calledOff = cancel
        cancel = undefined
        if (calledOff !== undefined) {
          holding = false
          calledOff()
          HttpSpan.recordUnsafe(request!, "interrupted", clock.currentTimeNanosUnsafe() - startedNanos, fiber.context)
          gate.leave()
        } else {
          leave()
        }
      }
      m.interrupted()
    })
  })
}
