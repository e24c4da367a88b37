/**
 * The client's resolved settings: where the service is, who the application is, and how long to
 * wait. Built from an options object (`layer`) or from the environment (`layerConfig`); both run
 * the same validation, and a refused setting fails the layer with `InvalidConfig` naming it.
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { InvalidConfig } from "./ClinicalError.js"
import * as validate from "./internal/validate.js"

/** What a user passes to {@link layer}. Only `baseUrl` and `applicationId` are required. */
export interface Options {
  /** The data host, e.g. `https://openapi.intelichart.com`. A path prefix is kept. */
  readonly baseUrl: string | URL
  /** The token host, e.g. `https://openapiauth.intelichart.com`. Defaults to `baseUrl`. */
  readonly authUrl?: string | URL | undefined
  /** The GUID the vendor issued. It alone obtains a token: pass it `Redacted` where you can. */
  readonly applicationId: string | Redacted.Redacted<string>
  /** Path of the token operation under `authUrl`. Default `/api/Server/Token`. */
  readonly tokenPath?: string | undefined
  /** Longest wait for one token request. Default 10 seconds. */
  readonly tokenTimeout?: Duration.DurationInput | undefined
  /** Longest wait for one data request attempt. Default 30 seconds. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /**
   * Soft refresh window: this close to expiry, a caller starts a background refresh and still gets
   * the current token. The window used is the smaller of this and half the token's lifetime.
   * Default 5 minutes.
   */
  readonly softRefreshWindow?: Duration.DurationInput | undefined
  /**
   * Hard refresh window: this close to expiry, callers wait for a new token. The window used is the
   * smaller of this and a tenth of the token's lifetime. Default 30 seconds.
   */
  readonly hardRefreshWindow?: Duration.DurationInput | undefined
}

/** The resolved settings every other service reads. */
export interface Service {
  /** Data host, no trailing slash. */
  readonly baseUrl: string
  /** Token host, no trailing slash. */
  readonly authUrl: string
  readonly applicationId: Redacted.Redacted<string>
  readonly tokenPath: string
  readonly tokenTimeout: Duration.Duration
  readonly requestTimeout: Duration.Duration
  readonly softRefreshWindow: Duration.Duration
  readonly hardRefreshWindow: Duration.Duration
}

/** The tag of the resolved settings. */
export class ClinicalConfig extends Context.Tag("effect-clinical/ClinicalConfig")<ClinicalConfig, Service>() {}

/** Defaults of the optional settings. */
export const defaults = {
  tokenPath: "/api/Server/Token",
  tokenTimeout: Duration.seconds(10),
  requestTimeout: Duration.seconds(30),
  softRefreshWindow: Duration.minutes(5),
  hardRefreshWindow: Duration.seconds(30)
} as const

/** The environment variable behind each setting, for {@link layerConfig}. */
export const environment: { readonly [K in keyof Options]-?: string } = {
  baseUrl: "CLINICAL_BASE_URL",
  authUrl: "CLINICAL_AUTH_URL",
  applicationId: "CLINICAL_APPLICATION_ID",
  tokenPath: "CLINICAL_TOKEN_PATH",
  tokenTimeout: "CLINICAL_TOKEN_TIMEOUT",
  requestTimeout: "CLINICAL_REQUEST_TIMEOUT",
  softRefreshWindow: "CLINICAL_SOFT_REFRESH_WINDOW",
  hardRefreshWindow: "CLINICAL_HARD_REFRESH_WINDOW"
}

const duration = (
  value: Duration.DurationInput | undefined,
  fallback: Duration.Duration,
  { allowZero }: { readonly allowZero: boolean }
): Either.Either<Duration.Duration, string> => {
  if (value === undefined) return Either.right(fallback)
  // Duration clamps negative numbers to zero; a negative setting is a mistake worth naming.
  if (typeof value === "number" && value < 0) return Either.left("must not be negative")
  const decoded = Duration.decodeUnknown(value)
  if (Option.isNone(decoded)) return Either.left("must be a duration, e.g. \"10 seconds\" or a number of milliseconds")
  const millis = Duration.toMillis(decoded.value)
  if (!Number.isFinite(millis)) return Either.left("must be finite")
  if (allowZero ? millis < 0 : millis <= 0) return Either.left(allowZero ? "must not be negative" : "must be positive")
  return Either.right(decoded.value)
}

const check = <A>(setting: keyof Options, result: Either.Either<A, string>): Either.Either<A, InvalidConfig> =>
  Either.mapLeft(result, (reason) => new InvalidConfig({ setting, reason }))

const positive = { allowZero: false }
const nonNegative = { allowZero: true }

/** Validates options into the resolved settings. Fails with `InvalidConfig` naming the first bad setting. */
export const make = (options: Options): Effect.Effect<Service, InvalidConfig> =>
  Effect.gen(function*() {
    const baseUrl = yield* check("baseUrl", validate.baseUrl(options.baseUrl))
    const authUrl = options.authUrl === undefined ? baseUrl : yield* check("authUrl", validate.baseUrl(options.authUrl))
    const applicationId = yield* check("applicationId", validate.guid(validate.reveal(options.applicationId)))
    const tokenPath = yield* check("tokenPath", validate.urlPath(options.tokenPath ?? defaults.tokenPath))
    const tokenTimeout = yield* check("tokenTimeout", duration(options.tokenTimeout, defaults.tokenTimeout, positive))
    const requestTimeout = yield* check(
      "requestTimeout",
      duration(options.requestTimeout, defaults.requestTimeout, positive)
    )
    const softRefreshWindow = yield* check(
      "softRefreshWindow",
      duration(options.softRefreshWindow, defaults.softRefreshWindow, nonNegative)
    )
    const hardRefreshWindow = yield* check(
      "hardRefreshWindow",
      duration(options.hardRefreshWindow, defaults.hardRefreshWindow, nonNegative)
    )
    if (Duration.greaterThan(hardRefreshWindow, softRefreshWindow)) {
      return yield* check("hardRefreshWindow", Either.left("must not be longer than softRefreshWindow"))
    }
    return {
      baseUrl,
      authUrl,
      applicationId: Redacted.make(applicationId),
      tokenPath,
      tokenTimeout,
      requestTimeout,
      softRefreshWindow,
      hardRefreshWindow
    }
  })

/** The settings from an options object. */
export const layer = (options: Options): Layer.Layer<ClinicalConfig, InvalidConfig> =>
  Layer.effect(ClinicalConfig, make(options))

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.map(Config.option(config), Option.getOrUndefined)

/** Reads the raw options from the environment (through Effect's `ConfigProvider`). */
export const options: Config.Config<Options> = Config.all({
  baseUrl: Config.string(environment.baseUrl),
  authUrl: optional(Config.string(environment.authUrl)),
  applicationId: Config.redacted(environment.applicationId),
  tokenPath: optional(Config.string(environment.tokenPath)),
  tokenTimeout: optional(Config.duration(environment.tokenTimeout)),
  requestTimeout: optional(Config.duration(environment.requestTimeout)),
  softRefreshWindow: optional(Config.duration(environment.softRefreshWindow)),
  hardRefreshWindow: optional(Config.duration(environment.hardRefreshWindow))
})

/**
 * The settings from the environment (see {@link environment}). A missing or malformed variable
 * fails with `ConfigError`; a refused value with `InvalidConfig` naming the variable.
 */
export const layerConfig: Layer.Layer<ClinicalConfig, ConfigError.ConfigError | InvalidConfig> = Layer.effect(
  ClinicalConfig,
  Effect.flatMap(
    options,
    (resolved) =>
      Effect.mapError(
        make(resolved),
        (error) => new InvalidConfig({ setting: environment[error.setting as keyof Options], reason: error.reason })
      )
  )
)
