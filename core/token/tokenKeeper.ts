/**
 * The token cache's moving parts, written once for both Effect lines: a runner of the pure
 * decisions in `tokenCache` (which hold every rule), one method per step, over the combinators the
 * lines share (`core/effects`) and a {@link KeeperLine} of what differs (the `Deferred`, the clock,
 * spans, metrics, the errors' classes). Each line's `TokenService` builds one and types it.
 *
 * - One refresh in flight, shared by every waiter; it runs in a fiber of the layer's scope, so a
 *   caller interrupted or timed out never cancels the refresh the others wait on.
 * - The state changes one step at a time under the lock and is read without it (the fast path,
 *   and the call's common path, which reads it synchronously).
 * - A failed background refresh is retried as `backgroundStep` says while callers keep the token.
 */
import type * as RetryPolicy from "../call/retryPolicy.js"
import type { Deferreds, Effects } from "../effects.js"
import type { HttpError } from "../errors.js"
import * as Core from "./accessToken.js"
import { fingerprintOf } from "./storedEntry.js"
import * as TokenCache from "./tokenCache.js"
import type { TokenLine } from "./tokenLine.js"
import type { IssuedToken } from "./tokenSharing.js"

/** A token as the cache hands it out (each line's `AccessToken`): the core's, with where it came from. */
export interface KeptToken<S> extends Core.AccessToken<S> {
  /** Where it came from: the token endpoint, or the token store (another instance of the fleet asked for it). */
  readonly source: "server" | "store"
  /**
   * Its number in the token store, the same on every instance sharing it (see `TokenStore`);
   * `undefined` when it is not in the store (the store was unavailable when it was obtained).
   */
  readonly storeGeneration: number | undefined
}

/**
 * What a line gives the keeper besides what every token runner takes (`TokenLine`). `F` is its
 * effect type, `S` its `Redacted`, `D` its `Deferred` of a token, `E` its `HttpError`.
 */
export interface KeeperLine<F, S, D, E> extends TokenLine<F, S, E> {
  /** `f` with the clock's wall time in ms, read synchronously. */
  readonly clockWith: (f: (now: number) => F) => F
  /** The error a failure's cause fails with, if it fails with one. */
  readonly errorOf: (cause: unknown) => E | undefined
  /** Whether a cause is interruptions alone. */
  readonly interruptedOnly: (cause: unknown) => boolean
  readonly withSpan: (effect: F, name: string, attributes: Record<string, unknown>) => F
  readonly countRefresh: (reason: TokenCache.Reason) => F
  readonly setLifetime: (seconds: number) => F
  readonly setSkew: (millis: number) => F
  /** The line's `Deferred` of a token (its type, for the state's `refresh`). */
  readonly deferreds: Deferreds<F, D>
}

/** What one cache is built over. */
export interface KeeperOptions<F> {
  readonly windows: TokenCache.Windows
  readonly policy: RetryPolicy.RetryPolicy
  /** The token endpoint's URL, for the error of a wait that ran out. */
  readonly url: string
  /** How a new token is had (`tokenSharing`): `obtain` succeeds with an `IssuedToken`. */
  readonly sharing: {
    readonly obtain: (avoid: ReadonlyArray<string>) => F
    readonly invalidate: (fingerprint: string) => F
  }
  /** `effect` under the cache's lock (one permit). */
  readonly locked: (effect: F) => F
  /** Runs `effect` in a fiber of the layer's scope, not waited for. */
  readonly fork: (effect: F) => F
}

/** What a caller does once the state has been decided on: take this effect's outcome, or wait for a refresh. */
type Next<F, D> =
  | { readonly _tag: "Now"; readonly outcome: F }
  | { readonly _tag: "Wait"; readonly refresh: D }

/** A refresh's outcome as handed to its waiters. */
type Outcome<S> =
  | { readonly _tag: "Success"; readonly token: KeptToken<S> }
  | { readonly _tag: "Failure"; readonly cause: unknown }

/** The token cache of one client (see the module's documentation). */
export class TokenKeeper<F, S, D, E extends HttpError> {
  private latest: TokenCache.State<KeptToken<S>, D, TokenCache.ThrottleError> = TokenCache.empty
  // The last token refused (401/419), by fingerprint: the refresh that follows must not take it again.
  private refused: string | undefined = undefined
  // An absurd lifetime is cut to maxTokenLifetime; the operator hears of it once, not on every refresh.
  private cutReported = false
  private readonly effects: Effects<F>

  constructor(private readonly options: KeeperOptions<F>, private readonly line: KeeperLine<F, S, D, E>) {
    this.effects = line.effects
  }

  /** A token fresh at `now` without a step of the lock, or `undefined`. */
  fresh(now: number): KeptToken<S> | undefined {
    return TokenCache.fresh(this.latest, now)
  }

  /** A token valid now, waiting at most `maxWaitMillis` (when given) for one being fetched. */
  acquire(maxWaitMillis: number | undefined): F {
    return this.line.clockWith((now) => {
      // Fast path: a fresh token, no lock taken, no timer.
      const token = this.fresh(now)
      return token !== undefined
        ? this.effects.succeed(token)
        : this.effects.flatMap(this.decide(now), (next: Next<F, D>) => this.follow(next, maxWaitMillis))
    })
  }

  // The store first, so that the refresh that follows cannot find the refused token there; and
  // the refresh avoids it even if the store could not drop it. Only the cached token counts: a
  // late refusal of an older one changes nothing.
  invalidate(token: KeptToken<S>): F {
    return this.effects.suspend(() => {
      if (typeof token !== "object" || token === null) return this.effects.void
      if (TokenCache.cachedOf(this.latest)?.generation !== token.generation) return this.effects.void
      const refused = this.refused = this.fingerprint(token.token)
      return this.effects.andThen(
        this.options.sharing.invalidate(refused),
        this.modify((current) => [undefined, TokenCache.invalidated(current, token.generation)])
      )
    })
  }

  /** The `Authorization` value of a token: `Bearer <token>`, as a secret. */
  private readonly bearer = (token: S): S => this.line.secret(`Bearer ${this.line.reveal(token)}`)

  private fingerprint(token: S): string {
    return fingerprintOf(this.line.reveal(token))
  }

  /** One step of the state under the lock: `step` gives the result and the next state. */
  private modify<A>(step: (current: typeof this.latest) => readonly [A, typeof this.latest]): F {
    return this.options.locked(this.effects.suspend(() => {
      const [result, next] = step(this.latest)
      this.latest = next
      return this.effects.succeed(result)
    }))
  }

  /** The store's tokens a refresh must not take: the one it replaces, and the last one refused. */
  private avoiding(held: TokenCache.Cached<KeptToken<S>> | undefined): ReadonlyArray<string> {
    const avoid = held === undefined ? [] : [this.fingerprint(held.token.token)]
    return this.refused === undefined ? avoid : [...avoid, this.refused]
  }

  // A background refresh retries as `backgroundStep` says, while callers keep the current token.
  private requestUntil(hardAt: number, avoid: ReadonlyArray<string>, retry = 1): F {
    const { effects } = this
    return effects.matchEffect(this.options.sharing.obtain(avoid), {
      onSuccess: effects.succeed,
      onFailure: (error: E) =>
        effects.flatMap(this.line.now, (now: number) =>
          effects.flatMap(this.line.random, (random: number) => {
            const step = TokenCache.backgroundStep(this.options.policy, error, retry, now, hardAt, random)
            if (step._tag === "GiveUp") return effects.fail(error)
            return effects.andThen(
              effects.annotateLogs(effects.logDebug("background token refresh failed; retrying"), {
                error: error._tag,
                delayMillis: Math.round(step.delayMillis)
              }),
              effects.andThen(effects.sleep(step.delayMillis), this.requestUntil(hardAt, avoid, retry + 1))
            )
          }))
    })
  }

  // Stores the outcome of a refresh (its exit, at `now`); the caller hands it to every waiter.
  private settle(exit: any, refresh: D, reason: TokenCache.Reason, now: number): F {
    return this.modify((current): readonly [Outcome<S>, typeof current] => {
      if (exit._tag === "Success") {
        const issued = exit.value as IssuedToken<S>
        const next = TokenCache.succeeded(
          current,
          (generation) =>
            Core.cachedToken(this.options.windows, issued, generation, this.bearer, {
              source: issued.source,
              storeGeneration: issued.storeGeneration
            })
        )
        return [{ _tag: "Success", token: next.cached.token }, next]
      }
      const error = this.line.errorOf(exit.cause)
      const throttle = error === undefined ? undefined : TokenCache.throttleOf(error, now)
      // Only the refresh the state records may end it (defensive: there is never another).
      const ours = current._tag === "Refreshing" && current.refresh === refresh
      return [{ _tag: "Failure", cause: exit.cause }, ours ? TokenCache.failed(current, reason, throttle) : current]
    })
  }

  /** A new token's facts, on the refresh's span, in the metrics and the log. */
  private reportIssued(token: KeptToken<S>): F {
    const { effects, line } = this
    const facts = {
      generation: token.generation,
      lifetimeSeconds: Math.round(token.lifetimeMillis / 1000),
      serverClockSkewMillis: token.serverClockSkewMillis ?? "unknown"
    }
    const cut = this.cutReported ? undefined : Core.lifetimeCut(token)
    if (cut !== undefined) this.cutReported = true
    return [
      effects.annotateCurrentSpan({
        "clinical.token.generation": facts.generation,
        "clinical.token.lifetime_seconds": facts.lifetimeSeconds,
        "clinical.token.server_lifetime_seconds": Math.round(token.serverLifetimeMillis / 1000),
        "clinical.server_clock_skew_ms": facts.serverClockSkewMillis,
        "clinical.token.source": token.source
      }),
      line.setLifetime(facts.lifetimeSeconds),
      token.serverClockSkewMillis === undefined ? effects.void : line.setSkew(token.serverClockSkewMillis),
      effects.annotateLogs(effects.logDebug("token issued"), facts),
      cut === undefined ? effects.void : effects.annotateLogs(effects.logWarning(Core.LIFETIME_CUT), cut)
    ].reduce((all, step) => effects.andThen(all, step))
  }

  /** A refresh's failure, on its span and in the log: its tag alone. */
  private reportFailure(cause: unknown): F {
    const error = this.line.errorOf(cause)?._tag ?? (this.line.interruptedOnly(cause) ? "interrupted" : "defect")
    return this.effects.andThen(
      this.effects.annotateCurrentSpan({ "clinical.error": error }),
      this.effects.annotateLogs(this.effects.logWarning("token refresh failed"), { error })
    )
  }

  // Runs in the layer's scope. Whatever happens to it (success, failure, interruption when the
  // layer closes), the state forgets the refresh and every waiter gets the outcome.
  private refresh(deferred: D, reason: TokenCache.Reason, held: TokenCache.Cached<KeptToken<S>> | undefined): F {
    const { effects, line } = this
    const request = reason === "soft-window"
      ? this.requestUntil(held?.hardAt ?? 0, this.avoiding(held))
      : this.options.sharing.obtain(this.avoiding(held))
    const settled = effects.onExit(
      effects.andThen(line.countRefresh(reason), request),
      (exit) =>
        effects.flatMap(
          line.now,
          (now: number) =>
            effects.flatMap(this.settle(exit, deferred, reason, now), (outcome: Outcome<S>) =>
              outcome._tag === "Success"
                ? effects.andThen(this.reportIssued(outcome.token), line.deferreds.succeed(deferred, outcome.token))
                : effects.andThen(this.reportFailure(outcome.cause), line.deferreds.failCause(deferred, outcome.cause)))
        )
    )
    return this.options.fork(
      // Forked from inside the uninterruptible decision: the refresh itself must stay
      // interruptible, or its timeouts could not fire and the layer could not close. The outcome
      // went to the waiters (and the log) above; the fiber itself ends quietly.
      effects.interruptible(
        effects.ignore(
          effects.annotateLogs(
            line.withSpan(settled, "TokenService.refresh", { "clinical.refresh.reason": reason }),
            { refreshReason: reason }
          )
        )
      )
    )
  }

  /** Starts a refresh and records it, in one step of the lock: succeeds with its `D`. */
  private start(current: typeof this.latest, reason: TokenCache.Reason): F {
    return this.effects.flatMap(this.line.deferreds.make(), (deferred: D) => {
      this.latest = TokenCache.started(current, deferred, reason)
      return this.effects.as(this.refresh(deferred, reason, TokenCache.cachedOf(current)), deferred)
    })
  }

  // The slow path, serialised by the lock: acts on the pure decision. Uninterruptible, so that a
  // caller interrupted here cannot fork a refresh the state never records (a second token
  // request); the wait it returns runs outside, interruptibly.
  private decide(now: number): F {
    const { effects } = this
    return effects.uninterruptible(this.options.locked(effects.suspend(() => {
      const current = this.latest
      const decision = TokenCache.decide(current, now)
      switch (decision._tag) {
        case "Serve":
          return effects.succeed({ _tag: "Now", outcome: effects.succeed(decision.token) })
        case "ServeAndRefresh":
          return effects.as(this.start(current, "soft-window"), {
            _tag: "Now",
            outcome: effects.succeed(decision.token)
          })
        case "Await":
          return effects.succeed({ _tag: "Wait", refresh: decision.refresh })
        case "RefreshAndAwait":
          return effects.map(this.start(current, decision.reason), (refresh) => ({ _tag: "Wait", refresh }))
        case "FailFast":
          return effects.succeed({
            _tag: "Now",
            outcome: effects.andThen(
              this.line.countThrottled,
              effects.fail(this.line.wrap(TokenCache.withRetryAfter(decision.error, decision.retryAfterMillis)))
            )
          })
      }
    })))
  }

  private follow(next: Next<F, D>, maxWaitMillis: number | undefined): F {
    if (next._tag === "Now") return next.outcome
    const waiting = this.line.deferreds.await(next.refresh)
    return maxWaitMillis === undefined ? waiting : this.line.timeout(waiting, maxWaitMillis, () =>
      this.line.wrap({
        _tag: "TransportError",
        operation: "token",
        reason: "Deadline",
        method: "POST",
        url: this.options.url,
        detail: `no token within ${maxWaitMillis} ms`
      }))
  }
}
