/**
 * How an instance gets a new token when a token store may hold one for the whole fleet: the
 * core's sharer (core/token/sharer.ts: the store's operations as the sharing uses them, and the
 * sharing machine run over them), given Effect 4, this line's metrics and errors. `TokenService`
 * calls it where it would otherwise request a token itself.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as Metrics from "../../../../core/observability/metrics.js"
import * as Core from "../../../../core/token/sharer.js"
import type { HttpError } from "../../ClinicalError.js"
import * as Telemetry from "../observability/telemetry.js"
import { type AnyEffect, tokenLine } from "./tokenLine.js"
import type { IssuedToken } from "./tokenRequest.js"

// The store's metrics, here beside their only user (the core's names and descriptions).

/** Failures of the shared token store, by `reason` (Timeout, Unavailable, Unreadable). */
const tokenStoreFailures = Telemetry.counter(Metrics.tokenStoreFailures)

/** Values in the shared token store no instance could read, replaced. */
const tokenStoreRepairs = Telemetry.counter(Metrics.tokenStoreRepairs)

/** Tokens taken from the shared token store instead of requested from the token endpoint. */
const tokensFromStore = Telemetry.counter(Metrics.tokensFromStore)

/**
 * What the sharing needs of its client (see the core's `Options`): the store's port, a token
 * request failing with an `HttpError`, and the client's background.
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
  countFailure: (reason) => Metric.update(Metric.withAttributes(tokenStoreFailures, { reason }), 1),
  countRepair: Metric.update(tokenStoreRepairs, 1),
  countAdopted: Metric.update(tokensFromStore, 1)
}

/**
 * The core's sharer over a store, with Effect 4: its effects are this line's, typed here, where the
 * line's types are known (core sees them as one opaque type).
 */
export const make = (options: Options): Sharing => new Core.Sharer(options, line) as unknown as Sharing
