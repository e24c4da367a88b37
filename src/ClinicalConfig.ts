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
  /**
   * The host of the authenticate operation (pass code and date of birth to PersonUid). The
   * service documents it on both hosts. Defaults to `baseUrl`.
   */
  readonly authenticateUrl?: string | URL | undefined
  /** Path of the authenticate operation under `authenticateUrl`. Default `/api/Server/Authenticate`. */
  readonly authenticatePath?: string | undefined
  /**
   * How a date of birth is written in the authenticate request: `MM`, `DD` and `YYYY` once each,
   * joined by `/`, `-` or `.`. Default `MM/DD/YYYY`, the form of the service's only sample.
   */
  readonly dateOfBirthFormat?: string | undefined
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
  /** Retries after the first attempt of a call (transport failures, timeouts, 429, 500, 502-504). 0 turns retries off. Default 3. */
  readonly maxRetries?: number | undefined
  /** First backoff delay; each retry doubles it, with jitter (half to all of it). Default 1 second. */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** Cap on one backoff delay (a longer `Retry-After` is still honoured). Default 30 seconds. */
  readonly retryMaxDelay?: Duration.DurationInput | undefined
  /**
   * Cap on a server's `Retry-After`: the longest the client waits before one retry, and the longest
   * it remembers a throttled token endpoint. At most 1 hour. Default 60 seconds.
   */
  readonly maxRetryAfter?: Duration.DurationInput | undefined
  /**
   * Cap on a token's lifetime: a longer one (a `TOKEN_EXPIRES` years ahead) is cut to this, with a
   * warning. The documented lifetime is one hour. Default 24 hours.
   */
  readonly maxTokenLifetime?: Duration.DurationInput | undefined
  /** Longest a whole call may take, retries and waits included. Default 60 seconds. */
  readonly deadline?: Duration.DurationInput | undefined
  /** Whether operations that write may be retried too. The documented operations only read. Default false. */
  readonly retryWrites?: boolean | undefined
  /** Most data requests in flight at once per client; more callers wait for a turn. Default 64. */
  readonly maxConcurrentRequests?: number | undefined
  /** Largest response body read, in bytes; a larger one fails the call. Default 4 MiB. */
  readonly maxResponseBytes?: number | undefined
}

/** The resolved settings every other service reads. */
export interface Service {
  /** Data host, no trailing slash. */
  readonly baseUrl: string
  /** Token host, no trailing slash. */
  readonly authUrl: string
  readonly applicationId: Redacted.Redacted<string>
  readonly tokenPath: string
  /** Authenticate host, no trailing slash. */
  readonly authenticateUrl: string
  readonly authenticatePath: string
  readonly dateOfBirthFormat: string
  readonly tokenTimeout: Duration.Duration
  readonly requestTimeout: Duration.Duration
  readonly softRefreshWindow: Duration.Duration
  readonly hardRefreshWindow: Duration.Duration
  readonly maxRetries: number
  readonly retryBaseDelay: Duration.Duration
  readonly retryMaxDelay: Duration.Duration
  readonly maxRetryAfter: Duration.Duration
  readonly maxTokenLifetime: Duration.Duration
  readonly deadline: Duration.Duration
  readonly retryWrites: boolean
  readonly maxConcurrentRequests: number
  readonly maxResponseBytes: number
}

/** The tag of the resolved settings. */
export class ClinicalConfig extends Context.Tag("effect-clinical/ClinicalConfig")<ClinicalConfig, Service>() {}

/** Defaults of the optional settings. */
export const defaults = {
  tokenPath: "/api/Server/Token",
  authenticatePath: "/api/Server/Authenticate",
  dateOfBirthFormat: "MM/DD/YYYY",
  tokenTimeout: Duration.seconds(10),
  requestTimeout: Duration.seconds(30),
  softRefreshWindow: Duration.minutes(5),
  hardRefreshWindow: Duration.seconds(30),
  maxRetries: 3,
  retryBaseDelay: Duration.seconds(1),
  retryMaxDelay: Duration.seconds(30),
  maxRetryAfter: Duration.seconds(60),
  maxTokenLifetime: Duration.hours(24),
  deadline: Duration.seconds(60),
  retryWrites: false,
  maxConcurrentRequests: 64,
  maxResponseBytes: 4 * 1024 * 1024
} as const

/** The environment variable behind each setting, for {@link layerConfig}. */
export const environment: { readonly [K in keyof Options]-?: string } = {
  baseUrl: "CLINICAL_BASE_URL",
  authUrl: "CLINICAL_AUTH_URL",
  applicationId: "CLINICAL_APPLICATION_ID",
  tokenPath: "CLINICAL_TOKEN_PATH",
  authenticateUrl: "CLINICAL_AUTHENTICATE_URL",
  authenticatePath: "CLINICAL_AUTHENTICATE_PATH",
  dateOfBirthFormat: "CLINICAL_DATE_OF_BIRTH_FORMAT",
  tokenTimeout: "CLINICAL_TOKEN_TIMEOUT",
  requestTimeout: "CLINICAL_REQUEST_TIMEOUT",
  softRefreshWindow: "CLINICAL_SOFT_REFRESH_WINDOW",
  hardRefreshWindow: "CLINICAL_HARD_REFRESH_WINDOW",
  maxRetries: "CLINICAL_MAX_RETRIES",
  retryBaseDelay: "CLINICAL_RETRY_BASE_DELAY",
  retryMaxDelay: "CLINICAL_RETRY_MAX_DELAY",
  maxRetryAfter: "CLINICAL_MAX_RETRY_AFTER",
  maxTokenLifetime: "CLINICAL_MAX_TOKEN_LIFETIME",
  deadline: "CLINICAL_DEADLINE",
  retryWrites: "CLINICAL_RETRY_WRITES",
  maxConcurrentRequests: "CLINICAL_MAX_CONCURRENT_REQUESTS",
  maxResponseBytes: "CLINICAL_MAX_RESPONSE_BYTES"
}

interface DurationBounds {
  readonly allowZero: boolean
  /** Longest allowed, with its wording for the refusal. */
  readonly max?: { readonly duration: Duration.Duration; readonly words: string } | undefined
}

const duration = (
  value: Duration.DurationInput | undefined,
  fallback: Duration.Duration,
  { allowZero, max }: DurationBounds
): Either.Either<Duration.Duration, string> => {
  if (value === undefined) return Either.right(fallback)
  // Duration clamps negative numbers to zero; a negative setting is a mistake worth naming.
  if (typeof value === "number" && value < 0) return Either.left("must not be negative")
  const decoded = Duration.decodeUnknown(value)
  if (Option.isNone(decoded)) return Either.left("must be a duration, e.g. \"10 seconds\" or a number of milliseconds")
  const millis = Duration.toMillis(decoded.value)
  if (!Number.isFinite(millis)) return Either.left("must be finite")
  if (allowZero ? millis < 0 : millis <= 0) return Either.left(allowZero ? "must not be negative" : "must be positive")
  if (max !== undefined && Duration.greaterThan(decoded.value, max.duration)) {
    return Either.left(`must be at most ${max.words}`)
  }
  return Either.right(decoded.value)
}

const integer = (
  value: number | undefined,
  fallback: number,
  min: number,
  max: number
): Either.Either<number, string> => {
  if (value === undefined) return Either.right(fallback)
  return Number.isInteger(value) && value >= min && value <= max
    ? Either.right(value)
    : Either.left(`must be a whole number from ${min} to ${max}`)
}

const check = <A>(
  setting: keyof Options | "options",
  result: Either.Either<A, string>
): Either.Either<A, InvalidConfig> => Either.mapLeft(result, (reason) => new InvalidConfig({ setting, reason }))

const positive: DurationBounds = { allowZero: false }
const nonNegative: DurationBounds = { allowZero: true }
const upToAnHour: DurationBounds = { allowZero: false, max: { duration: Duration.hours(1), words: "1 hour" } }
const upToAYear: DurationBounds = { allowZero: false, max: { duration: Duration.days(365), words: "365 days" } }

type DurationSetting =
  | "tokenTimeout"
  | "requestTimeout"
  | "softRefreshWindow"
  | "hardRefreshWindow"
  | "retryBaseDelay"
  | "retryMaxDelay"
  | "maxRetryAfter"
  | "maxTokenLifetime"
  | "deadline"

/** A duration setting, or its default. */
const durationSetting = (options: Options, setting: DurationSetting, allowed: DurationBounds) =>
  check(setting, duration(options[setting], defaults[setting], allowed))

/** A whole-number setting within bounds, or its default. */
const integerSetting = (
  options: Options,
  setting: "maxRetries" | "maxConcurrentRequests" | "maxResponseBytes",
  min: number,
  max: number
) => check(setting, integer(options[setting], defaults[setting], min, max))

/** Validates options into the resolved settings. Fails with `InvalidConfig` naming the first bad setting. */
export const make = (options: Options): Effect.Effect<Service, InvalidConfig> =>
  Effect.gen(function*() {
    // JavaScript callers and JSON configuration can pass anything at all.
    if (typeof options !== "object" || options === null) {
      return yield* check("options", Either.left("must be an object with at least baseUrl and applicationId"))
    }
    const baseUrl = yield* check("baseUrl", validate.baseUrl(options.baseUrl))
    const authUrl = options.authUrl === undefined ? baseUrl : yield* check("authUrl", validate.baseUrl(options.authUrl))
    const applicationId = yield* check("applicationId", validate.guid(validate.reveal(options.applicationId)))
    const tokenPath = yield* check("tokenPath", validate.urlPath(options.tokenPath ?? defaults.tokenPath))
    const authenticateUrl = options.authenticateUrl === undefined
      ? baseUrl
      : yield* check("authenticateUrl", validate.baseUrl(options.authenticateUrl))
    const authenticatePath = yield* check(
      "authenticatePath",
      validate.urlPath(options.authenticatePath ?? defaults.authenticatePath)
    )
    const dateOfBirthFormat = yield* check(
      "dateOfBirthFormat",
      validate.dayFormat(options.dateOfBirthFormat ?? defaults.dateOfBirthFormat)
    )
    const tokenTimeout = yield* durationSetting(options, "tokenTimeout", positive)
    const requestTimeout = yield* durationSetting(options, "requestTimeout", positive)
    const softRefreshWindow = yield* durationSetting(options, "softRefreshWindow", nonNegative)
    const hardRefreshWindow = yield* durationSetting(options, "hardRefreshWindow", nonNegative)
    if (Duration.greaterThan(hardRefreshWindow, softRefreshWindow)) {
      return yield* check("hardRefreshWindow", Either.left("must not be longer than softRefreshWindow"))
    }
    const maxRetries = yield* integerSetting(options, "maxRetries", 0, 100)
    const retryBaseDelay = yield* durationSetting(options, "retryBaseDelay", nonNegative)
    const retryMaxDelay = yield* durationSetting(options, "retryMaxDelay", nonNegative)
    if (Duration.greaterThan(retryBaseDelay, retryMaxDelay)) {
      return yield* check("retryBaseDelay", Either.left("must not be longer than retryMaxDelay"))
    }
    const maxRetryAfter = yield* durationSetting(options, "maxRetryAfter", upToAnHour)
    const maxTokenLifetime = yield* durationSetting(options, "maxTokenLifetime", upToAYear)
    const deadline = yield* durationSetting(options, "deadline", positive)
    const retryWrites = yield* check(
      "retryWrites",
      options.retryWrites === undefined || typeof options.retryWrites === "boolean"
        ? Either.right(options.retryWrites ?? defaults.retryWrites)
        : Either.left("must be true or false")
    )
    const maxConcurrentRequests = yield* integerSetting(options, "maxConcurrentRequests", 1, 100_000)
    const maxResponseBytes = yield* integerSetting(options, "maxResponseBytes", 1, 1024 * 1024 * 1024)
    return {
      baseUrl,
      authUrl,
      applicationId: Redacted.make(applicationId),
      tokenPath,
      authenticateUrl,
      authenticatePath,
      dateOfBirthFormat,
      tokenTimeout,
      requestTimeout,
      softRefreshWindow,
      hardRefreshWindow,
      maxRetries,
      retryBaseDelay,
      retryMaxDelay,
      maxRetryAfter,
      maxTokenLifetime,
      deadline,
      retryWrites,
      maxConcurrentRequests,
      maxResponseBytes
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
  authenticateUrl: optional(Config.string(environment.authenticateUrl)),
  authenticatePath: optional(Config.string(environment.authenticatePath)),
  dateOfBirthFormat: optional(Config.string(environment.dateOfBirthFormat)),
  tokenTimeout: optional(Config.duration(environment.tokenTimeout)),
  requestTimeout: optional(Config.duration(environment.requestTimeout)),
  softRefreshWindow: optional(Config.duration(environment.softRefreshWindow)),
  hardRefreshWindow: optional(Config.duration(environment.hardRefreshWindow)),
  maxRetries: optional(Config.integer(environment.maxRetries)),
  retryBaseDelay: optional(Config.duration(environment.retryBaseDelay)),
  retryMaxDelay: optional(Config.duration(environment.retryMaxDelay)),
  maxRetryAfter: optional(Config.duration(environment.maxRetryAfter)),
  maxTokenLifetime: optional(Config.duration(environment.maxTokenLifetime)),
  deadline: optional(Config.duration(environment.deadline)),
  retryWrites: optional(Config.boolean(environment.retryWrites)),
  maxConcurrentRequests: optional(Config.integer(environment.maxConcurrentRequests)),
  maxResponseBytes: optional(Config.integer(environment.maxResponseBytes))
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
