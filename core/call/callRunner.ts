/**
 * The Effect path of a data call, written once for both lines: the runner that performs each
 * action the call machine answers with (core/call/callMachine.ts) with the line's own Effect
 * (see core/effects.ts). Each line hands over a {@link CallLine}: what differs between its
 * Effect, its spans and its metrics. The common path (a cached token, a free turn, a reply that
 * reads, in the transport's callbacks) stays each line's own (`commonPath`): it is made of fiber
 * internals no two lines share, and it goes on here whenever it cannot finish.
 *
 * `F` is the line's effect type, opaque here; `T` its token, `E` its error, `C` its clock, `K` its
 * call and `R` its response.
 */
import type { Effects } from "../effects.js"
import type * as Core from "../errors.js"
import type { Action, CallMachine } from "./callMachine.js"
import { Failed } from "./response.js"

/** What the machine answers after an event that needs the time and a random draw (for the jitter). */
export type Decision = (now: number, random: number) => Action

/** What a call of any line is to the runner: the operation it counts and logs under. */
export interface AnyCall {
  readonly operation: string
}

/** A token as the runner reads it: its generation, for the logs. */
export interface Token {
  readonly generation: number
}

/** A response as the runner reads it: its status. */
export interface Reply {
  readonly status: number
}

/** What the runner needs of its line. */
export interface CallLine<F, T extends Token, E extends Core.ClinicalError, C, K extends AnyCall, R extends Reply> {
  readonly effects: Effects<F>
  /** Succeeds with a random number in [0, 1). */
  readonly random: F
  /** `f` with the clock's time in ms. */
  readonly clockWith: (f: (now: number) => F) => F
  /** The line's token service: a token within `millis` (failing with `E`), and dropping a refused one from the cache. */
  readonly tokens: { readonly getWithin: (millis: number) => F; readonly invalidate: (token: T) => F }
  /** Runs `effect` holding a turn of the client's gate, waiting for one in arrival order. */
  readonly inTurn: (effect: F) => F
  /** Sends the attempt's request (token, timeout: the machine's), observed as an HTTP attempt: an `R`, or the labelled `E`. */
  readonly send: (call: K, m: CallMachine<T, E, C>) => F
  /** What `response` reads to: its JSON, or the core's failure it stands for. */
  readonly read: (call: K, used: T, response: R, now: number) => unknown
  /** The end of a call whose answer read: what the call makes of it, recorded. */
  readonly finished: (call: K, m: CallMachine<T, E, C>) => F
  /** The end of a call that failed with the machine's error, recorded. */
  readonly failed: (call: K, m: CallMachine<T, E, C>) => F
  /** Counts a retry of `operation` for `cause`. */
  readonly countRetry: (operation: string, cause: string) => F
  /** Counts a call refused by the breaker or the retry budget. */
  readonly countRefused: (by: "circuit" | "budget") => F
  /** A core failure as the line's error. */
  readonly wrap: (error: Core.ClinicalError) => E
}

/** The Effect path of the calls of one client. */
export class CallRunner<F, T extends Token, E extends Core.ClinicalError, C, K extends AnyCall, R extends Reply> {
  private readonly effects: Effects<F>

  constructor(private readonly line: CallLine<F, T, E, C, K, R>) {
    this.effects = line.effects
  }

  /** An attempt begun (`action`, its first): a probe of the breaker interrupted lets another call probe. */
  attempt(call: K, m: CallMachine<T, E, C>, action: Action): F {
    const performed = this.perform(call, m, action)
    return m.probing() ? this.effects.onInterrupt(performed, () => this.effects.sync(() => m.interrupted())) : performed
  }

  /** The next action after an event that may retry: with the time and the jitter's random draw. */
  decided(call: K, m: CallMachine<T, E, C>, decide: Decision): F {
    return this.effects.flatMap(
      this.line.random,
      (random: number) => this.line.clockWith((now) => this.perform(call, m, decide(now, random)))
    )
  }

  /** Performs the machine's action (all but `Send`, which only a turn given answers with). */
  private perform(call: K, m: CallMachine<T, E, C>, action: Action): F {
    const { effects, line } = this
    switch (action) {
      case "Token":
        return effects.matchEffect(line.tokens.getWithin(m.waitMillis), {
          // Nothing of this call was sent yet: a token failure may always be retried.
          onFailure: (error: E) => this.decided(call, m, (now, random) => m.tokenFailed(error, now, random)),
          onSuccess: (token: T) => line.clockWith((now) => this.perform(call, m, m.tokenTaken(token, now)))
        })
      case "Turn":
      case "Send":
        return this.turn(call, m)
      case "Finish":
        return line.finished(call, m)
      case "Fail":
        return this.fail(call, m)
      case "Refresh":
        return effects.andThen(
          effects.annotateLogs(effects.logDebug("token rejected; refreshing it and retrying once"), {
            status: m.status ?? 0,
            generation: m.token?.generation
          }),
          effects.andThen(
            m.token === undefined ? effects.void : line.tokens.invalidate(m.token),
            line.clockWith((now) => this.attempt(call, m, m.refreshed(now)))
          )
        )
      case "Sleep":
        return effects.andThen(
          line.countRetry(call.operation, m.cause),
          effects.andThen(
            effects.annotateLogs(effects.logDebug("retrying"), {
              cause: m.cause,
              retry: m.retried,
              delayMillis: m.waitMillis
            }),
            effects.andThen(
              effects.sleep(m.waitMillis),
              line.clockWith((now) => this.attempt(call, m, m.woke(now)))
            )
          )
        )
    }
  }

  private fail(call: K, m: CallMachine<T, E, C>): F {
    const { effects, line } = this
    switch (m.refusedBy) {
      case "circuit":
        return effects.andThen(line.countRefused("circuit"), line.failed(call, m))
      case "budget":
        return effects.andThen(
          line.countRefused("budget"),
          effects.andThen(effects.logDebug("retry not sent: the retry budget is spent"), line.failed(call, m))
        )
      default:
        return line.failed(call, m)
    }
  }

  /**
   * An attempt's turn and exchange. A turn of the gate is held only while the request is in
   * flight, and the machine learns of the end while it is held (it counts as in flight). The wait
   * for one needs no timer of its own to respect the deadline: turns are given in arrival order,
   * so every call ahead started earlier, has an earlier deadline, and holds its turn no longer
   * than that (its request's timeout is cut to it); a turn that comes too late fails at once.
   */
  private turn(call: K, m: CallMachine<T, E, C>): F {
    const { effects, line } = this
    let action: Action = "Fail"
    const exchange = line.clockWith((now) => {
      action = m.turnGiven(now)
      if (action !== "Send") return effects.succeed(undefined)
      return effects.matchEffect(line.send(call, m), {
        onFailure: (error: E) => {
          m.sendFailed(error)
          return effects.fail(error)
        },
        onSuccess: (response: R) => {
          m.replied(response.status)
          return effects.succeed(response)
        }
      })
    })
    return effects.matchEffect(line.inTurn(exchange), {
      onFailure: () => this.decided(call, m, (now, random) => m.afterFailure(now, random)),
      onSuccess: (response: R | undefined) =>
        response === undefined ? this.perform(call, m, action) : this.answered(call, m, response)
    })
  }

  private answered(call: K, m: CallMachine<T, E, C>, response: R): F {
    return this.line.clockWith((now) => {
      const read = this.line.read(call, m.token!, response, now)
      return read instanceof Failed
        ? this.decided(
          call,
          m,
          (now, random) => m.answeredWith(response.status, this.line.wrap(read.error), now, random)
        )
        : this.perform(call, m, m.answered(response.status, read))
    })
  }
}
