/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the
 * core's sharer (core/token/sharer.ts: the store's operations as the sharing uses them, and the
 * sharing machine run over them), given this line's Effect, metrics and errors. `TokenService`
 * calls it where it would otherwise request a token itself.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/token/sharer.js"
import type { HttpError } from "../../ClinicalError.js"
import * as Telemetry from "../observability/telemetry.js"
import { type AnyEffect, tokenLine } from "./tokenLine.js"
import type { IssuedToken } from "./tokenRequest.js"

/**
 * What the sharing needs of its client (see the core's `Options`): a `TokenStore.Service`, a
 * token request failing with an `HttpError`, and the client's background.
 */
export type Options = Core.Options<AnyEffect, Redacted.Redacted<string>>

/** A client's way to new tokens through a store. */
export interface Sharing {
  /** A new token; the store's tokens with a fingerprint in `avoid` are not taken. */
  readonly obtain: (avoid: ReadonlyArray<string>) => Effect.Effect<IssuedToken, HttpError>
  /** Drops the token with this fingerprint from the store if it is still there; a failure only counts and logs. */
  readonly invalidate: (fingerprint: string) => Effect.Effect<void>
}

const line: Core.Line<AnyEffect, Redacted.Redacted<string>, HttpError> = {
  ...tokenLine,
  countFailure: (reason) => Metric.increment(Metric.tagged(Telemetry.tokenStoreFailures, "reason", reason)),
  countRepair: Metric.increment(Telemetry.tokenStoreRepairs),
  countAdopted: Metric.increment(Telemetry.tokensFromStore)
}

/**
 * The core's sharer over a store, with this line's Effect: its effects are this line's, typed here, where the
 * line's types are known (core sees them as one opaque type).
 */
export const make = (options: Options): Sharing => new Core.Sharer(options, line) as unknown as Sharing
