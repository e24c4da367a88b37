/**
 * The client's resolved settings: where the service is, who the application is, and how long to
 * wait. Built from an options object (`layer`) or from the environment (`layerConfig`); both run
 * the same validation, and a refused setting fails the layer with `InvalidConfig` naming it.
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import * as Settings from "../core/config/settings.js"
import { InvalidConfig } from "./ClinicalError.js"
import { fromCore } from "./internal/fromCore.js"
import * as validate from "./internal/validate.js"

/**
 * A duration as a setting takes it: anything Effect's `Duration` reads (`"10 seconds"`, a number of
 * milliseconds, a `Duration`) or the short form (`"30s"`, `"2m"`, `"1500ms"`, `"1h"`, `"1d"`).
 */
export type DurationSetting = Settings.Duration<Duration.DurationInput>

/** What a user passes to {@link layer}. Only `baseUrl` and `applicationId` are required. */
export type Options = Settings.Options<Redacted.Redacted<string>, Duration.DurationInput>

/** The resolved settings every other service reads; the default transport's network settings among them. */
export type Service = Settings.Settings<Redacted.Redacted<string>, Duration.Duration>

/** The tag of the resolved settings. */
export class ClinicalConfig extends Context.Tag("effect-clinical/ClinicalConfig")<ClinicalConfig, Service>() {}

/** Defaults of the optional settings (`authUrl` and `authenticateUrl` default to `baseUrl`). */
export const defaults = Settings.defaults(validate.line)

/** The environment variable behind each setting, for {@link layerConfig}. */
export const environment = Settings.environment

/** Every variable a setting is read from, the parts of one included. */
export const variables = Settings.variables

/**
 * A warning for each variable of `present` (an environment's names) that looks like a mistyped
 * setting (`CLINICAL_REQUEST_TIMOUT`), naming the setting it is nearest to (see the core's).
 */
export const misspellingWarnings = Settings.misspellingWarnings

/** The settings, or every refusal as one `InvalidConfig` (the first as `setting`, the rest as `others`). */
const resolve = (
  given: Settings.Given,
  label: (name: Settings.Name) => string
): Either.Either<Service, InvalidConfig> => {
  const resolved = Settings.resolve(given, validate.line, label)
  return resolved.ok ? Either.right(resolved.value) : Either.left(fromCore(Settings.invalidConfigOf(resolved.refusals)))
}

/** Validates options into the resolved settings. Fails with `InvalidConfig` naming every bad setting. */
export const make = (options: Options): Effect.Effect<Service, InvalidConfig> =>
  // JavaScript callers and JSON configuration can pass anything at all.
  typeof options !== "object" || options === null
    ? Effect.fail(
      new InvalidConfig({ setting: "options", reason: "must be an object with at least baseUrl and applicationId" })
    )
    : resolve(options as Settings.Given, (name) => name)

/** The settings from an options object. */
export const layer = (options: Options): Layer.Layer<ClinicalConfig, InvalidConfig> =>
  Layer.effect(ClinicalConfig, make(options))

/** A variable's text, through Effect's `ConfigProvider` (unset: `undefined`). */
const text = (variable: string): Effect.Effect<string | undefined, InvalidConfig> =>
  Config.option(Config.string(variable)).pipe(
    Effect.map(Option.getOrUndefined),
    Effect.mapError((error) => new InvalidConfig({ setting: variable, reason: `could not be read (${error._op})` }))
  )

/**
 * The settings from the environment (see {@link environment}), read through Effect's
 * `ConfigProvider`. Durations may be written the short way (`30s`, `2m`, `1500ms`) or Effect's
 * (`30 seconds`). A variable that is not set, or whose value is refused, fails with `InvalidConfig`
 * naming the variable, never with the value.
 */
export const fromEnvironment: Effect.Effect<Service, InvalidConfig> = Effect.flatMap(
  Effect.forEach(Settings.variables, (variable) => Effect.map(text(variable), (value) => [variable, value] as const)),
  (entries) => {
    const texts = new Map(entries)
    return resolve(Settings.givenFromVariables((variable) => texts.get(variable)), (name) => Settings.environment[name])
  }
)

/**
 * The settings from the environment; a `CLINICAL_*` variable of `process.env` a few letters away
 * from a setting's is logged as a warning naming the setting it is nearest to.
 */
export const layerConfig: Layer.Layer<ClinicalConfig, InvalidConfig> = Layer.effect(
  ClinicalConfig,
  Effect.zipRight(
    Effect.suspend(() =>
      Effect.forEach(misspellingWarnings(Object.keys(process.env)), (warning) => Effect.logWarning(warning), {
        discard: true
      })
    ),
    fromEnvironment
  )
)
