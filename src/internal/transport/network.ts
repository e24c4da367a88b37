/**
 * The default transport's way out of the machine (core/transport/network.ts) over this line's
 * secrets and durations: its dispatchers built when the layer is, closed with its scope, and a
 * refused setting this line's `InvalidConfig`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Undici from "undici"
import * as Core from "../../../core/transport/network.js"
import type { InvalidConfig } from "../../ClinicalError.js"
import { line } from "../validate.js"
import { describe, invalidArgument } from "./wire.js"

export { type Environment, type Network, refusedOption } from "../../../core/transport/network.js"

/** What the default transport takes besides undici's `Agent` options. */
export type NetworkOptions = Core.NetworkOptions<Redacted.Redacted<string>>

/** What `HttpTransport.layerUndici` takes: undici's `Agent` options and the {@link NetworkOptions}. */
export type UndiciOptions = Core.UndiciOptions<Redacted.Redacted<string>>

/** The network settings of a client's configuration (`ClinicalConfig`), already read. */
export type Settings = Core.Settings<Redacted.Redacted<string>, Duration.Duration>

/** The default transport's options that a client's settings give (what is not set is left to undici). */
export const optionsOf = (settings: Settings): UndiciOptions => Core.optionsOf(settings, Duration.toMillis)

/**
 * The dispatchers for `options` in `env` (the process's environment, for the proxy variables and
 * `NODE_EXTRA_CA_CERTS`), or the `InvalidConfig` naming what is refused.
 */
export const make = (
  undici: typeof Undici,
  options: UndiciOptions | undefined,
  env: Core.Environment
): Either.Either<Core.Network, InvalidConfig> => {
  const built = Core.make(undici, options, env, line)
  return built.ok ? Either.right(built.value) : Either.left(invalidArgument(built.setting, built.reason))
}

/**
 * The dispatchers of `options` in `env` (read when the effect runs: by default the process's
 * environment), closed with the scope. Options undici refuses fail with `InvalidConfig`.
 */
export const acquire = (
  options: UndiciOptions | undefined,
  env?: Core.Environment
): Effect.Effect<Core.Network, InvalidConfig, Scope.Scope> =>
  Effect.acquireRelease(
    options !== undefined && (typeof options !== "object" || options === null)
      ? Effect.fail(invalidArgument("agentOptions", "must be an object of undici Agent options"))
      : Effect.flatMap(Effect.promise(() => import("undici")), (undici) =>
        Effect.flatten(Effect.try({
          try: () => make(undici, options, env ?? process.env),
          catch: (cause) =>
            invalidArgument(
              Core.refusedOption(cause instanceof Error ? cause.message : "", Core.splitOptions(options ?? {}).agent),
              `was refused by undici: ${describe(cause)}`
            )
        }))),
    (built) => Effect.promise(() => built.close())
  )
