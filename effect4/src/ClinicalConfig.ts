/**
 * The client's resolved settings: where the service is, who the application is, and how long to
 * wait. Built from an options object (`layer`) or from the environment (`layerConfig`); both run
 * the core's one table of settings (core/config/settings.ts), and a refused setting fails the
 * layer with `InvalidConfig` naming it, never showing its value.
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Settings from "../../core/config/settings.js"
import { InvalidConfig } from "./ClinicalError.js"
import { fromCore } from "./internal/fromCore.js"
import { line } from "./internal/line.js"

/** A duration as a setting takes it: a `Duration.Input` or the short form (`"30s"`, `"2m"`, `"1500ms"`). */
export type DurationSetting = Settings.Duration<Duration.Input>

/** What a user passes to {@link layer}. Only `baseUrl` and `applicationId` are required. */
export type Options = Settings.Options<Redacted.Redacted<string>, Duration.Input>

/** The resolved settings every other service reads. */
export type Service = Settings.Settings<Redacted.Redacted<string>, Duration.Duration>

/** The resolved settings. */
export class ClinicalConfig extends Context.Service<ClinicalConfig, Service>()("effect-clinical/ClinicalConfig") {}

/** Defaults of the optional settings (`authUrl` and `authenticateUrl` default to `baseUrl`). */
export const defaults = Settings.defaults(line)

/** The environment variable behind each setting, for {@link layerConfig}. */
export const environment = Settings.environment

/** Every variable a setting is read from, the parts of one included. */
export const variables = Settings.variables

/** The settings, or every refusal as one `InvalidConfig` (the first as `setting`, the rest as `others`). */
const resolve = (
  given: Settings.Given,
  label: (name: Settings.Name) => string
): Effect.Effect<Service, InvalidConfig> => {
  const resolved = Settings.resolve(given, line, label)
  return resolved.ok
    ? Effect.succeed(resolved.value)
    : Effect.fail(fromCore(Settings.invalidConfigOf(resolved.refusals)))
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

/**
 * The settings from variables read by `lookup` (an environment of the caller's own: the Promise
 * client's `createClinicalClientFromEnv`), as {@link fromEnvironment} reads them.
 */
export const fromVariables = (
  lookup: (variable: string) => string | undefined
): Effect.Effect<Service, InvalidConfig> =>
  Effect.suspend(() =>
    resolve(Settings.givenFromVariables((variable) => lookup(variable)), (name) => Settings.environment[name])
  )

/** A variable's text, through Effect's `ConfigProvider` (unset: `undefined`). */
const text = (variable: string): Effect.Effect<string | undefined, InvalidConfig> =>
  Config.option(Config.String(variable)).pipe(
    Effect.map(Option.getOrUndefined),
    Effect.mapError(() => new InvalidConfig({ setting: variable, reason: "could not be read" }))
  )

/**
 * The settings from the environment (see {@link environment}), read through Effect's
 * `ConfigProvider`. A variable that is not set, or whose value is refused, fails with
 * `InvalidConfig` naming the variable, never with the value.
 */
export const fromEnvironment: Effect.Effect<Service, InvalidConfig> = Effect.flatMap(
  Effect.forEach(Settings.variables, (variable) => Effect.map(text(variable), (value) => [variable, value] as const)),
  (entries) => {
    const texts = new Map(entries)
    return fromVariables((variable) => texts.get(variable))
  }
)

/** A warning for each variable of `present` that looks like a mistyped setting, naming the setting it is nearest to. */
export const misspellingWarnings = Settings.misspellingWarnings

/**
 * The settings from the environment; a `CLINICAL_*` variable of `process.env` a few letters away
 * from a setting's is logged as a warning naming the setting it is nearest to.
 */
export const layerConfig: Layer.Layer<ClinicalConfig, InvalidConfig> = Layer.effect(
  ClinicalConfig,
  Effect.andThen(
    Effect.suspend(() =>
      Effect.forEach(misspellingWarnings(Object.keys(process.env)), (warning) => Effect.logWarning(warning), {
        discard: true
      })
    ),
    fromEnvironment
  )
)
