/**
 * The default transport's way out of the machine (core/transport/network.ts) over this line's
 * secrets and durations: its dispatchers built when the layer is, closed with its scope, and a
 * refused setting this line's `InvalidConfig`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Undici from "undici"
import { describe } from "../../../../core/transport/failures.js"
import * as Core from "../../../../core/transport/network.js"
import type { InvalidConfig } from "../../ClinicalError.js"
import { line } from "../line.js"
import { invalidArgument } from "./wire.js"

/** What the default transport takes besides undici's `Agent` options. */
export type NetworkOptions = Core.NetworkOptions<Redacted.Redacted<string>>

/** What `HttpTransport.layerUndici` takes: undici's `Agent` options and the {@link NetworkOptions}. */
export type UndiciOptions = Core.UndiciOptions<Redacted.Redacted<string>>

/** The network settings of a client's configuration (`ClinicalConfig`), already read. */
export type Settings = Core.Settings<Redacted.Redacted<string>, Duration.Duration>

/** The default transport's options that a client's settings give (what is not set is left to undici). */
export const optionsOf = (settings: Settings): UndiciOptions => Core.optionsOf(settings, Duration.toMillis)

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
        Effect.flatMap(
          Effect.try({
            try: () => Core.make(undici as unknown as typeof Undici, options, env ?? process.env, line),
            catch: (cause) =>
              invalidArgument(
                Core.refusedOption(cause instanceof Error ? cause.message : "", Core.splitOptions(options ?? {}).agent),
                `was refused by undici: ${describe(cause)}`
              )
          }),
          (built) => built.ok ? Effect.succeed(built.value) : Effect.fail(invalidArgument(built.setting, built.reason))
        )),
    (built) => Effect.promise(() => built.close())
  )
