/**
 * The client's resolved settings: where the service is, who the application is, and how long to
 * wait. Built from an options object (`layer`) or from the environment (`layerConfig`); both run
 * the same validation, and a refused setting fails the layer with `InvalidConfig` naming it.
 */
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as CircuitBreaker from "../core/call/circuitBreaker.js"
import * as ConcurrencyLimit from "../core/call/concurrencyLimit.js"
import * as RetryBudget from "../core/call/retryBudget.js"
import { misspelledSettings, misspellingWarning } from "../core/settingTypos.js"
import { InvalidConfig } from "./ClinicalError.js"
import type { NetworkOptions, Settings as NetworkSettings } from "./internal/transport/network.js"
import * as Proxy from "./internal/transport/proxy.js"
import * as Trust from "./internal/transport/trust.js"
import * as validate from "./internal/validate.js"

/**
 * A duration as a setting takes it: anything Effect's `Duration` reads (`"10 seconds"`, a number of
 * milliseconds, a `Duration`) or the short form (`"30s"`, `"2m"`, `"1500ms"`, `"1h"`, `"1d"`).
 */
export type DurationSetting = Duration.DurationInput | `${number}${"ms" | "s" | "m" | "h" | "d"}`

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
  readonly tokenTimeout?: DurationSetting | undefined
  /** Longest wait for one data request attempt. Default 30 seconds. */
  readonly requestTimeout?: DurationSetting | undefined
  /**
   * Soft refresh window: this close to expiry, a caller starts a background refresh and still gets
   * the current token. The window used is the smaller of this and half the token's lifetime.
   * Default 5 minutes.
   */
  readonly softRefreshWindow?: DurationSetting | undefined
  /**
   * Hard refresh window: this close to expiry, callers wait for a new token. The window used is the
   * smaller of this and a tenth of the token's lifetime. Default 30 seconds.
   */
  readonly hardRefreshWindow?: DurationSetting | undefined
  /** Retries after the first attempt of a call (transport failures, timeouts, 429, 500, 502-504). 0 turns retries off. Default 3. */
  readonly maxRetries?: number | undefined
  /** First backoff delay; each retry doubles it, with jitter (half to all of it). Default 1 second. */
  readonly retryBaseDelay?: DurationSetting | undefined
  /** Cap on one backoff delay (a longer `Retry-After` is still honoured). Default 30 seconds. */
  readonly retryMaxDelay?: DurationSetting | undefined
  /**
   * Cap on a server's `Retry-After`: the longest the client waits before one retry, and the longest
   * it remembers a throttled token endpoint. At most 1 hour. Default 60 seconds.
   */
  readonly maxRetryAfter?: DurationSetting | undefined
  /**
   * Cap on a token's lifetime: a longer one (a `TOKEN_EXPIRES` years ahead) is cut to this, with a
   * warning. The documented lifetime is one hour. Default 24 hours.
   */
  readonly maxTokenLifetime?: DurationSetting | undefined
  /** Longest a whole call may take, retries and waits included. Default 60 seconds. */
  readonly deadline?: DurationSetting | undefined
  /** Whether operations that write may be retried too. The documented operations only read. Default false. */
  readonly retryWrites?: boolean | undefined
  /**
   * Whether a 429 is retried by the call itself (after its `Retry-After`). False ends the call at
   * once with `RateLimited`, for a caller that pauses a whole fleet on it (the BullMQ worker).
   * Default true.
   */
  readonly retryRateLimited?: boolean | undefined
  /**
   * Most data requests in flight at once per client; more callers wait for a turn. With
   * `adaptiveConcurrency`, the ceiling of the limit the client finds. Default 64.
   */
  readonly maxConcurrentRequests?: number | undefined
  /**
   * Whether the client finds by itself how many requests the service takes at once: it lets more
   * out while answers come back, and fewer after a 429, a 503 or an attempt timeout (see
   * docs/resilience.md). Off: always `maxConcurrentRequests`. Default true.
   */
  readonly adaptiveConcurrency?: boolean | undefined
  /** Requests let out at once before the limit has learnt anything (it doubles quickly). Default 4. */
  readonly initialConcurrency?: number | undefined
  /**
   * Whether retries are bounded by a budget: a share of the first attempts (`retryBudgetRatio`)
   * plus 10 a second, so that when many calls fail together their retries do not multiply the
   * load; a retry beyond it fails at once with the error that asked for it. Default true.
   */
  readonly retryBudget?: boolean | undefined
  /** Retries per first attempt the budget allows, above 0 and at most 1. Default 0.5. */
  readonly retryBudgetRatio?: number | undefined
  /**
   * Failures in a row that say the service is down (the network failing, a 5xx, an attempt timing
   * out) after which calls fail at once with `CircuitOpen` for a cool-down, then one call probes
   * the service. 0 turns the breaker off. Default 10.
   */
  readonly circuitBreakerThreshold?: number | undefined
  /** The breaker's first cool-down; each failed probe doubles it. Default 500 ms. */
  readonly circuitBreakerCooldown?: DurationSetting | undefined
  /** The breaker's longest cool-down. Default 2 seconds. */
  readonly circuitBreakerMaxCooldown?: DurationSetting | undefined
  /** Largest response body read, in bytes; a larger one fails the call. Default 4 MiB. */
  readonly maxResponseBytes?: number | undefined
  /**
   * Whether each request carries the W3C `traceparent` header of its attempt's span, so that the
   * service's own traces join the caller's. Default false: nothing is sent that the service did
   * not ask for.
   */
  readonly tracePropagation?: boolean | undefined
  /**
   * The HTTP proxy of the default undici transport: a URL (`http://user:password@proxy:3128`,
   * credentials percent-encoded: a secret, pass it `Redacted` where you can), or `false` / `"none"`
   * for none. Default: the environment's `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` (either case),
   * as curl reads them. An https target is tunnelled with CONNECT: the proxy sees only the host.
   */
  readonly proxy?: string | URL | Redacted.Redacted<string> | false | undefined
  /** Targets that go around the proxy, as `NO_PROXY` writes them. Default: the environment's `NO_PROXY`. */
  readonly noProxy?: string | undefined
  /** A CA the default transport trusts besides Node's roots: its PEM text, or a PEM file's path. */
  readonly ca?: string | undefined
  /** Trust `ca` alone, not Node's roots nor `NODE_EXTRA_CA_CERTS`. Default false. */
  readonly caOnly?: boolean | undefined
  /**
   * A client certificate for a service that asks for one (mutual TLS): `{ cert, key, passphrase? }`
   * (PEM text or file paths) or `{ pfx, passphrase? }` (PKCS#12 bytes or a file path). The key and
   * the passphrase are secrets.
   */
  readonly clientCertificate?: NetworkOptions["clientCertificate"]
  /** Connections the default transport keeps open to one host, at most. Default: no bound (undici's). */
  readonly connections?: number | undefined
  /** How long an idle connection is kept for the next request. Default 4 seconds (undici's). */
  readonly keepAliveTimeout?: DurationSetting | undefined
  /** Longest wait for a connection (TCP and TLS) to be made. Default 10 seconds (undici's). */
  readonly connectTimeout?: DurationSetting | undefined
}

/** The resolved settings every other service reads; the default transport's network settings among them. */
export interface Service extends NetworkSettings {
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
  readonly retryRateLimited: boolean
  readonly maxConcurrentRequests: number
  readonly adaptiveConcurrency: boolean
  readonly initialConcurrency: number
  readonly retryBudget: boolean
  readonly retryBudgetRatio: number
  readonly circuitBreakerThreshold: number
  readonly circuitBreakerCooldown: Duration.Duration
  readonly circuitBreakerMaxCooldown: Duration.Duration
  readonly maxResponseBytes: number
  readonly tracePropagation: boolean
}

/** The tag of the resolved settings. */
export class ClinicalConfig extends Context.Tag("effect-clinical/ClinicalConfig")<ClinicalConfig, Service>() {}

/** Reads one setting from what a user wrote: an option's value, or an environment variable's text. */
type Parse<A> = (value: unknown) => Either.Either<A, string>

/**
 * One setting: its environment variable, how it is read, and its default (`undefined`: required or
 * derived). A setting that is an object in the options takes each field from a variable of its own
 * in the environment (`parts`: field to variable; `variable` is the first).
 */
interface Setting<A> {
  readonly variable: string
  readonly parse: Parse<A>
  readonly fallback: A | undefined
  readonly parts?: Readonly<Record<string, string>> | undefined
}

const setting = <A>(variable: string, parse: Parse<A>, fallback?: A): Setting<A> => ({ variable, parse, fallback })

interface DurationBounds {
  readonly allowZero: boolean
  /** Longest allowed, with its wording for the refusal. */
  readonly max?: { readonly duration: Duration.Duration; readonly words: string } | undefined
}

const duration = ({ allowZero, max }: DurationBounds): Parse<Duration.Duration> => (value) =>
  Either.flatMap(validate.duration(value), (decoded) => {
    const millis = Duration.toMillis(decoded)
    if (!Number.isFinite(millis)) return Either.left("must be finite")
    if (allowZero ? millis < 0 : millis <= 0) {
      return Either.left(allowZero ? "must not be negative" : "must be positive")
    }
    if (max !== undefined && Duration.greaterThan(decoded, max.duration)) {
      return Either.left(`must be at most ${max.words}`)
    }
    return Either.right(decoded)
  })

const positive = duration({ allowZero: false })

/**
 * A breaker's cool-down: from 10 ms (callers waiting for its probe come back this often) to an
 * hour (longer is an outage the application should see, not a pause).
 */
const breakerCooldown: Parse<Duration.Duration> = (value) =>
  Either.flatMap(
    duration({ allowZero: false, max: { duration: Duration.hours(1), words: "1 hour" } })(value),
    (decoded) => Duration.toMillis(decoded) < 10 ? Either.left("must be at least 10 ms") : Either.right(decoded)
  )
const nonNegative = duration({ allowZero: true })

/** `NO_PROXY`'s text: host names, addresses, networks, `*`; entries that mean nothing are skipped, as curl skips them. */
const noProxy: Parse<string> = (value) =>
  typeof value === "string" && value.length <= 4096
    ? Either.right(value.trim())
    : Either.left("must be text such as \"localhost,.internal.example,10.0.0.0/8\"")

const applicationId: Parse<Redacted.Redacted<string>> = (value) =>
  Either.map(validate.guid(validate.reveal(value)), Redacted.make)

/** Every setting, once: the options, the environment, the defaults and the checks all come from here. */
const settings: { readonly [K in keyof Service]: Setting<Service[K]> } = {
  baseUrl: setting("CLINICAL_BASE_URL", validate.baseUrl),
  authUrl: setting("CLINICAL_AUTH_URL", validate.baseUrl), // defaults to baseUrl
  applicationId: setting("CLINICAL_APPLICATION_ID", applicationId),
  tokenPath: setting("CLINICAL_TOKEN_PATH", validate.urlPath, "/api/Server/Token"),
  authenticateUrl: setting("CLINICAL_AUTHENTICATE_URL", validate.baseUrl), // defaults to baseUrl
  authenticatePath: setting("CLINICAL_AUTHENTICATE_PATH", validate.urlPath, "/api/Server/Authenticate"),
  dateOfBirthFormat: setting("CLINICAL_DATE_OF_BIRTH_FORMAT", validate.dayFormat, "MM/DD/YYYY"),
  tokenTimeout: setting("CLINICAL_TOKEN_TIMEOUT", positive, Duration.seconds(10)),
  requestTimeout: setting("CLINICAL_REQUEST_TIMEOUT", positive, Duration.seconds(30)),
  softRefreshWindow: setting("CLINICAL_SOFT_REFRESH_WINDOW", nonNegative, Duration.minutes(5)),
  hardRefreshWindow: setting("CLINICAL_HARD_REFRESH_WINDOW", nonNegative, Duration.seconds(30)),
  maxRetries: setting("CLINICAL_MAX_RETRIES", validate.integer(0, 100), 3),
  retryBaseDelay: setting("CLINICAL_RETRY_BASE_DELAY", nonNegative, Duration.seconds(1)),
  retryMaxDelay: setting("CLINICAL_RETRY_MAX_DELAY", nonNegative, Duration.seconds(30)),
  maxRetryAfter: setting(
    "CLINICAL_MAX_RETRY_AFTER",
    duration({ allowZero: false, max: { duration: Duration.hours(1), words: "1 hour" } }),
    Duration.seconds(60)
  ),
  maxTokenLifetime: setting(
    "CLINICAL_MAX_TOKEN_LIFETIME",
    duration({ allowZero: false, max: { duration: Duration.days(365), words: "365 days" } }),
    Duration.hours(24)
  ),
  deadline: setting("CLINICAL_DEADLINE", positive, Duration.seconds(60)),
  retryWrites: setting("CLINICAL_RETRY_WRITES", validate.boolean, false),
  retryRateLimited: setting("CLINICAL_RETRY_RATE_LIMITED", validate.boolean, true),
  maxConcurrentRequests: setting("CLINICAL_MAX_CONCURRENT_REQUESTS", validate.integer(1, 100_000), 64),
  adaptiveConcurrency: setting("CLINICAL_ADAPTIVE_CONCURRENCY", validate.boolean, true),
  initialConcurrency: setting(
    "CLINICAL_INITIAL_CONCURRENCY",
    validate.integer(1, 100_000),
    ConcurrencyLimit.DEFAULTS.initial
  ),
  retryBudget: setting("CLINICAL_RETRY_BUDGET", validate.boolean, true),
  retryBudgetRatio: setting("CLINICAL_RETRY_BUDGET_RATIO", validate.share, RetryBudget.DEFAULTS.ratio),
  circuitBreakerThreshold: setting(
    "CLINICAL_CIRCUIT_BREAKER_THRESHOLD",
    validate.integer(0, 100_000),
    CircuitBreaker.DEFAULTS.failureThreshold
  ),
  circuitBreakerCooldown: setting(
    "CLINICAL_CIRCUIT_BREAKER_COOLDOWN",
    breakerCooldown,
    Duration.millis(CircuitBreaker.DEFAULTS.cooldownMillis)
  ),
  circuitBreakerMaxCooldown: setting(
    "CLINICAL_CIRCUIT_BREAKER_MAX_COOLDOWN",
    breakerCooldown,
    Duration.millis(CircuitBreaker.DEFAULTS.maxCooldownMillis)
  ),
  maxResponseBytes: setting("CLINICAL_MAX_RESPONSE_BYTES", validate.integer(1, 1024 * 1024 * 1024), 4 * 1024 * 1024),
  tracePropagation: setting("CLINICAL_TRACE_PROPAGATION", validate.boolean, false),
  proxy: setting("CLINICAL_PROXY", Proxy.proxySetting, Proxy.FROM_ENVIRONMENT),
  noProxy: setting("CLINICAL_NO_PROXY", noProxy),
  ca: setting("CLINICAL_CA_FILE", Trust.caSetting),
  caOnly: setting("CLINICAL_CA_ONLY", validate.boolean, false),
  clientCertificate: {
    ...setting("CLINICAL_CLIENT_CERT_FILE", Trust.clientCertificate),
    parts: {
      cert: "CLINICAL_CLIENT_CERT_FILE",
      key: "CLINICAL_CLIENT_KEY_FILE",
      passphrase: "CLINICAL_CLIENT_KEY_PASSPHRASE",
      pfx: "CLINICAL_CLIENT_PFX_FILE"
    }
  },
  connections: setting("CLINICAL_CONNECTIONS", validate.integer(1, 100_000)),
  keepAliveTimeout: setting("CLINICAL_KEEP_ALIVE_TIMEOUT", positive),
  connectTimeout: setting("CLINICAL_CONNECT_TIMEOUT", positive)
}

type Name = keyof Service

const names = Object.keys(settings) as ReadonlyArray<Name>

/** Defaults of the optional settings (`authUrl` and `authenticateUrl` default to `baseUrl`). */
export const defaults: { readonly [K in Name]?: Service[K] } = Object.fromEntries(
  names.flatMap((name) => (settings[name].fallback === undefined ? [] : [[name, settings[name].fallback]]))
)

/** The environment variable behind each setting, for {@link layerConfig}. */
export const environment: { readonly [K in Name]: string } = Object.fromEntries(
  names.map((name) => [name, settings[name].variable])
) as { readonly [K in Name]: string }

/** What was given for each setting (an option's value, or a variable's text), before it is read. */
type Given = { readonly [K in Name]?: unknown }

/** One refusal per setting, in the order of {@link settings}: `setting` is its label. */
type Refusal = { readonly setting: string; readonly reason: string }

/** The first refusal as the error, every other one with it: one run names every missing variable. */
const refusedAll = ([first, ...others]: readonly [Refusal, ...Array<Refusal>]): InvalidConfig =>
  new InvalidConfig({ ...first, ...(others.length > 0 ? { others } : {}) })

/**
 * Reads every setting from what was given, then checks the rules between them. Fails with every
 * refusal at once (the first as `setting`/`reason`, the rest as `others`), naming each setting
 * through `label` (the option's name, or the variable's).
 */
const resolve = (given: Given, label: (name: Name) => string): Either.Either<Service, InvalidConfig> => {
  const refusals: Array<Refusal> = []
  const resolved: Record<string, unknown> = {}
  for (const name of names) {
    const value = given[name]
    if (value === undefined) {
      const fallback = settings[name].fallback
      if (fallback === undefined && (name === "baseUrl" || name === "applicationId")) {
        refusals.push({ setting: label(name), reason: "is not set" })
      }
      resolved[name] = fallback
      continue
    }
    const parsed: Either.Either<unknown, string> = settings[name].parse(value)
    if (Either.isLeft(parsed)) refusals.push({ setting: label(name), reason: parsed.left })
    else resolved[name] = parsed.right
  }
  if (Arr.isNonEmptyArray(refusals)) return Either.left(refusedAll(refusals))
  const service = resolved as { -readonly [K in Name]: Service[K] }
  service.authUrl ??= service.baseUrl
  service.authenticateUrl ??= service.baseUrl
  const refuse = (name: Name, reason: string) => Either.left(new InvalidConfig({ setting: label(name), reason }))
  if (Duration.greaterThan(service.hardRefreshWindow, service.softRefreshWindow)) {
    return refuse("hardRefreshWindow", "must not be longer than softRefreshWindow")
  }
  if (Duration.greaterThan(service.retryBaseDelay, service.retryMaxDelay)) {
    return refuse("retryBaseDelay", "must not be longer than retryMaxDelay")
  }
  if (Duration.greaterThan(service.circuitBreakerCooldown, service.circuitBreakerMaxCooldown)) {
    return refuse("circuitBreakerCooldown", "must not be longer than circuitBreakerMaxCooldown")
  }
  if (service.caOnly && service.ca === undefined) return refuse("caOnly", "needs ca: the CA to trust alone")
  return Either.right(service)
}

/** Validates options into the resolved settings. Fails with `InvalidConfig` naming every bad setting. */
export const make = (options: Options): Effect.Effect<Service, InvalidConfig> =>
  // JavaScript callers and JSON configuration can pass anything at all.
  typeof options !== "object" || options === null
    ? Effect.fail(
      new InvalidConfig({ setting: "options", reason: "must be an object with at least baseUrl and applicationId" })
    )
    : resolve(options as Given, (name) => name)

/** The settings from an options object. */
export const layer = (options: Options): Layer.Layer<ClinicalConfig, InvalidConfig> =>
  Layer.effect(ClinicalConfig, make(options))

/** A variable's text, through Effect's `ConfigProvider`; unset or blank is `undefined`. */
const text = (variable: string): Effect.Effect<string | undefined, InvalidConfig> =>
  Config.option(Config.string(variable)).pipe(
    Effect.map((value) => (Option.isSome(value) && value.value.trim() !== "" ? value.value.trim() : undefined)),
    Effect.mapError((error) => new InvalidConfig({ setting: variable, reason: `could not be read (${error._op})` }))
  )

/** What the environment gives for a setting: its variable's text, or an object of its parts' (`undefined` when none is set). */
const given = (read: Setting<unknown>): Effect.Effect<unknown, InvalidConfig> => {
  const parts = read.parts
  if (parts === undefined) return text(read.variable)
  return Effect.map(
    Effect.forEach(Object.entries(parts), ([field, variable]) => Effect.map(text(variable), (value) => [field, value])),
    (entries) => {
      const set = entries.filter(([, value]) => value !== undefined)
      return set.length === 0 ? undefined : Object.fromEntries(set)
    }
  )
}

/**
 * The settings from the environment (see {@link environment}), read through Effect's
 * `ConfigProvider`. Durations may be written the short way (`30s`, `2m`, `1500ms`) or Effect's
 * (`30 seconds`). A variable that is not set, or whose value is refused, fails with `InvalidConfig`
 * naming the variable, never with the value.
 */
export const fromEnvironment: Effect.Effect<Service, InvalidConfig> = Effect.flatMap(
  Effect.forEach(names, (name) => Effect.map(given(settings[name]), (value) => [name, value] as const)),
  (entries) => resolve(Object.fromEntries(entries) as Given, (name) => settings[name].variable)
)

/** Variables the library's own tools read (the command line, the demo): no typo of a setting. */
const TOOL_VARIABLES: ReadonlySet<string> = new Set(["CLINICAL_STACK", "CLINICAL_PERSON_UIDS"])

/**
 * A warning for each variable of `present` (an environment's names) that looks like a mistyped
 * setting (`CLINICAL_REQUEST_TIMOUT`), naming the setting it is nearest to. A misspelled setting is
 * silently unset: worth a warning, which names variables only, never a value. Each caller says it
 * its own way: a log line, Node's `process.emitWarning`, the command line's stderr.
 */
export const misspellingWarnings = (present: Iterable<string>): ReadonlyArray<string> =>
  misspelledSettings(Array.from(present).filter((name) => !TOOL_VARIABLES.has(name)), variables).map(misspellingWarning)

/** Every variable a setting is read from, the parts of one included. */
export const variables: ReadonlyArray<string> = [
  ...new Set(names.flatMap((name) => [settings[name].variable, ...Object.values(settings[name].parts ?? {})]))
]

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
