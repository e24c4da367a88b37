/**
 * The client's settings, once for both Effect lines: every setting's name, its environment
 * variable, how it is read, its default, and the rules between settings. Each line's
 * `ClinicalConfig` is a shell over this: it says how it holds a secret (`S`, its `Redacted`) and a
 * duration (`D`, its `Duration`), and how it reads what a user gave (see {@link Line}).
 *
 * A refusal names the setting (the option's name, or the variable's) and never shows its value.
 */
import * as CircuitBreaker from "../call/circuitBreaker.js"
import * as ConcurrencyLimit from "../call/concurrencyLimit.js"
import * as RetryBudget from "../call/retryBudget.js"
import type { RetryPolicy } from "../call/retryPolicy.js"
import type { InvalidConfig } from "../errors.js"
import { misspelledSettings, misspellingWarning } from "../settingTypos.js"
import * as Proxy from "../transport/proxy.js"
import * as Trust from "../transport/trust.js"
import * as validate from "../validate.js"
import { accept, type Checked, refuse } from "../validate.js"

import type { Line, Name, Settings } from "./options.js"

export type { Duration, Line, Name, Options, Settings } from "./options.js"

/** Reads one setting from what a user wrote: an option's value, or an environment variable's text. */
type Parse = <S, D>(value: unknown, line: Line<S, D>) => Checked<unknown>

/**
 * One setting: its environment variable, how it is read, and its default (`undefined`: required or
 * derived; a duration's in milliseconds). A setting that is an object in the options takes each
 * field from a variable of its own in the environment (`parts`: field to variable).
 */
interface Setting {
  readonly variable: string
  readonly parse: Parse
  readonly fallback?: unknown
  readonly durationFallback?: number | undefined
  readonly parts?: Readonly<Record<string, string>> | undefined
}

/** The short forms people type: `30s`, `2m`, `1500ms`, `1h`, `1d` (decimals allowed: `1.5s`). */
const SHORT_DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/i

const UNIT_MILLIS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/**
 * A duration: anything the line's `Duration` reads (`"10 seconds"`, a number of milliseconds, a
 * `Duration`) or a short form (`30s`, `2m`, `1500ms`). A bare number in text is refused: it would
 * be unclear whether it meant seconds or milliseconds.
 */
export const duration = <S, D>(value: unknown, line: Line<S, D>): Checked<D> => {
  const refusal = "must be a duration, e.g. \"30s\", \"2m\", \"1500ms\" or \"10 seconds\""
  // Effect's Duration clamps negative numbers to zero; a negative setting is a mistake worth naming.
  if (typeof value === "number" && value < 0) return refuse("must not be negative")
  if (typeof value === "number" && Number.isNaN(value)) return refuse(refusal)
  if (typeof value === "string") {
    const short = SHORT_DURATION.exec(value.trim())
    if (short !== null) return accept(line.millis(Number(short[1]) * UNIT_MILLIS[short[2]!.toLowerCase()]!))
    if (/^\s*-/.test(value)) return refuse("must not be negative")
    if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return refuse(`${refusal}: a bare number needs a unit`)
  }
  const decoded = line.decodeDuration(value)
  return decoded === undefined ? refuse(refusal) : accept(decoded)
}

interface DurationBounds {
  readonly allowZero: boolean
  /** Shortest allowed, in milliseconds. */
  readonly minMillis?: number | undefined
  /** Longest allowed, in milliseconds, with its wording for the refusal. */
  readonly max?: { readonly millis: number; readonly words: string } | undefined
}

const bounded = ({ allowZero, max, minMillis }: DurationBounds): Parse => (value, line) => {
  const decoded = duration(value, line)
  if (!decoded.ok) return decoded
  const millis = line.toMillis(decoded.value)
  if (!Number.isFinite(millis)) return refuse("must be finite")
  if (allowZero ? millis < 0 : millis <= 0) return refuse(allowZero ? "must not be negative" : "must be positive")
  if (max !== undefined && line.greaterThan(decoded.value, line.millis(max.millis))) {
    return refuse(`must be at most ${max.words}`)
  }
  if (minMillis !== undefined && millis < minMillis) return refuse(`must be at least ${minMillis} ms`)
  return decoded
}

const HOUR = 3_600_000
const positive = bounded({ allowZero: false })
const nonNegative = bounded({ allowZero: true })
/**
 * A breaker's cool-down: from 10 ms (callers waiting for its probe come back this often) to an
 * hour (longer is an outage the application should see, not a pause).
 */
const breakerCooldown = bounded({ allowZero: false, max: { millis: HOUR, words: "1 hour" }, minMillis: 10 })

/** `NO_PROXY`'s text: host names, addresses, networks, `*`; entries that mean nothing are skipped, as curl skips them. */
const noProxy: Parse = (value) =>
  typeof value === "string" && value.length <= 4096
    ? accept(value.trim())
    : refuse("must be text such as \"localhost,.internal.example,10.0.0.0/8\"")

const applicationId: Parse = (value, line) => {
  const checked = validate.guid(line.reveal(value))
  return checked.ok ? accept(line.seal(checked.value)) : checked
}

/** A check that needs nothing of the line. */
const plain = (check: (value: unknown) => Checked<unknown>): Parse => (value) => check(value)

const setting = (variable: string, parse: Parse, fallback?: unknown): Setting => ({ variable, parse, fallback })
const durationSetting = (variable: string, parse: Parse, millis?: number): Setting => ({
  variable,
  parse,
  durationFallback: millis
})

/** Every setting, once: the options, the environment, the defaults and the checks all come from here. */
const settings: { readonly [K in Name]: Setting } = {
  baseUrl: setting("CLINICAL_BASE_URL", plain(validate.baseUrl)),
  authUrl: setting("CLINICAL_AUTH_URL", plain(validate.baseUrl)), // defaults to baseUrl
  applicationId: setting("CLINICAL_APPLICATION_ID", applicationId),
  tokenPath: setting("CLINICAL_TOKEN_PATH", plain(validate.urlPath), "/api/Server/Token"),
  authenticateUrl: setting("CLINICAL_AUTHENTICATE_URL", plain(validate.baseUrl)), // defaults to baseUrl
  authenticatePath: setting("CLINICAL_AUTHENTICATE_PATH", plain(validate.urlPath), "/api/Server/Authenticate"),
  dateOfBirthFormat: setting("CLINICAL_DATE_OF_BIRTH_FORMAT", plain(validate.dayFormat), "MM/DD/YYYY"),
  tokenTimeout: durationSetting("CLINICAL_TOKEN_TIMEOUT", positive, 10_000),
  requestTimeout: durationSetting("CLINICAL_REQUEST_TIMEOUT", positive, 30_000),
  softRefreshWindow: durationSetting("CLINICAL_SOFT_REFRESH_WINDOW", nonNegative, 300_000),
  hardRefreshWindow: durationSetting("CLINICAL_HARD_REFRESH_WINDOW", nonNegative, 30_000),
  maxRetries: setting("CLINICAL_MAX_RETRIES", plain(validate.integer(0, 100)), 3),
  retryBaseDelay: durationSetting("CLINICAL_RETRY_BASE_DELAY", nonNegative, 1_000),
  retryMaxDelay: durationSetting("CLINICAL_RETRY_MAX_DELAY", nonNegative, 30_000),
  maxRetryAfter: durationSetting(
    "CLINICAL_MAX_RETRY_AFTER",
    bounded({ allowZero: false, max: { millis: HOUR, words: "1 hour" } }),
    60_000
  ),
  maxTokenLifetime: durationSetting(
    "CLINICAL_MAX_TOKEN_LIFETIME",
    bounded({ allowZero: false, max: { millis: 365 * 24 * HOUR, words: "365 days" } }),
    24 * HOUR
  ),
  deadline: durationSetting("CLINICAL_DEADLINE", positive, 60_000),
  retryWrites: setting("CLINICAL_RETRY_WRITES", plain(validate.boolean), false),
  retryRateLimited: setting("CLINICAL_RETRY_RATE_LIMITED", plain(validate.boolean), true),
  maxConcurrentRequests: setting("CLINICAL_MAX_CONCURRENT_REQUESTS", plain(validate.integer(1, 100_000)), 64),
  adaptiveConcurrency: setting("CLINICAL_ADAPTIVE_CONCURRENCY", plain(validate.boolean), true),
  initialConcurrency: setting(
    "CLINICAL_INITIAL_CONCURRENCY",
    plain(validate.integer(1, 100_000)),
    ConcurrencyLimit.DEFAULTS.initial
  ),
  retryBudget: setting("CLINICAL_RETRY_BUDGET", plain(validate.boolean), true),
  retryBudgetRatio: setting("CLINICAL_RETRY_BUDGET_RATIO", plain(validate.share), RetryBudget.DEFAULTS.ratio),
  circuitBreakerThreshold: setting(
    "CLINICAL_CIRCUIT_BREAKER_THRESHOLD",
    plain(validate.integer(0, 100_000)),
    CircuitBreaker.DEFAULTS.failureThreshold
  ),
  circuitBreakerCooldown: durationSetting(
    "CLINICAL_CIRCUIT_BREAKER_COOLDOWN",
    breakerCooldown,
    CircuitBreaker.DEFAULTS.cooldownMillis
  ),
  circuitBreakerMaxCooldown: durationSetting(
    "CLINICAL_CIRCUIT_BREAKER_MAX_COOLDOWN",
    breakerCooldown,
    CircuitBreaker.DEFAULTS.maxCooldownMillis
  ),
  maxResponseBytes: setting(
    "CLINICAL_MAX_RESPONSE_BYTES",
    plain(validate.integer(1, 1024 * 1024 * 1024)),
    4 * 1024 * 1024
  ),
  tracePropagation: setting("CLINICAL_TRACE_PROPAGATION", plain(validate.boolean), false),
  proxy: setting("CLINICAL_PROXY", (value, line) => Proxy.proxySetting(value, line), Proxy.FROM_ENVIRONMENT),
  noProxy: setting("CLINICAL_NO_PROXY", noProxy),
  ca: setting("CLINICAL_CA_FILE", (value, line) => Trust.caSetting(value, line.reveal)),
  caOnly: setting("CLINICAL_CA_ONLY", plain(validate.boolean), false),
  clientCertificate: {
    ...setting("CLINICAL_CLIENT_CERT_FILE", (value, line) => Trust.clientCertificate(value, line)),
    parts: {
      cert: "CLINICAL_CLIENT_CERT_FILE",
      key: "CLINICAL_CLIENT_KEY_FILE",
      passphrase: "CLINICAL_CLIENT_KEY_PASSPHRASE",
      pfx: "CLINICAL_CLIENT_PFX_FILE"
    }
  },
  connections: setting("CLINICAL_CONNECTIONS", plain(validate.integer(1, 100_000))),
  keepAliveTimeout: setting("CLINICAL_KEEP_ALIVE_TIMEOUT", positive),
  connectTimeout: setting("CLINICAL_CONNECT_TIMEOUT", positive)
}

/** Every setting's name, in the order refusals are listed. */
export const names: ReadonlyArray<Name> = Object.freeze(Object.keys(settings) as Array<Name>)

/** The defaults of the optional settings (`authUrl` and `authenticateUrl` default to `baseUrl`). */
export const defaults = <S, D>(line: Line<S, D>): { readonly [K in Name]?: Settings<S, D>[K] } =>
  Object.fromEntries(names.flatMap((name): Array<readonly [Name, unknown]> => {
    const { durationFallback, fallback } = settings[name]
    if (durationFallback !== undefined) return [[name, line.millis(durationFallback)]]
    return fallback === undefined ? [] : [[name, fallback]]
  }))

/** The environment variable behind each setting. */
export const environment: { readonly [K in Name]: string } = Object.freeze(
  Object.fromEntries(
    names.map((name) => [name, settings[name].variable])
  ) as { readonly [K in Name]: string }
)

/** Every variable a setting is read from, the parts of one included. */
export const variables: ReadonlyArray<string> = Object.freeze([
  ...new Set(names.flatMap((name) => [settings[name].variable, ...Object.values(settings[name].parts ?? {})]))
])

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

/** The variables of a setting read from several (`clientCertificate`'s parts), field by field. */
export const partsOf = (name: Name): Readonly<Record<string, string>> | undefined => settings[name].parts

/** What was given for each setting (an option's value, or a variable's text), before it is read. */
export type Given = { readonly [K in Name]?: unknown }

/** One refused setting: `setting` is its label (the option's name or the variable's). */
export interface Refusal {
  readonly setting: string
  readonly reason: string
}

/** The settings, or every refusal (the first one first). */
export type Resolved<S, D> =
  | { readonly ok: true; readonly value: Settings<S, D> }
  | { readonly ok: false; readonly refusals: readonly [Refusal, ...Array<Refusal>] }

const refused = <S, D>(refusals: readonly [Refusal, ...Array<Refusal>]): Resolved<S, D> => ({ ok: false, refusals })

/** The rules between settings, once each is read: the first broken one. */
const between = <S, D>(resolved: Settings<S, D>, line: Line<S, D>): readonly [Name, string] | undefined => {
  const longer = line.greaterThan
  if (longer(resolved.hardRefreshWindow, resolved.softRefreshWindow)) {
    return ["hardRefreshWindow", "must not be longer than softRefreshWindow"]
  }
  if (longer(resolved.retryBaseDelay, resolved.retryMaxDelay)) {
    return ["retryBaseDelay", "must not be longer than retryMaxDelay"]
  }
  if (longer(resolved.circuitBreakerCooldown, resolved.circuitBreakerMaxCooldown)) {
    return ["circuitBreakerCooldown", "must not be longer than circuitBreakerMaxCooldown"]
  }
  if (resolved.caOnly && resolved.ca === undefined) return ["caOnly", "needs ca: the CA to trust alone"]
  return undefined
}

/**
 * Reads every setting from what was given, then checks the rules between them. Refuses with every
 * refusal at once (one run names every missing variable), each setting named through `label`.
 */
export const resolve = <S, D>(given: Given, line: Line<S, D>, label: (name: Name) => string): Resolved<S, D> => {
  const refusals: Array<Refusal> = []
  // Every setting present, in the table's order (an unset optional one as `undefined`).
  const fallbacks = defaults(line)
  const resolved: Record<string, unknown> = {}
  for (const name of names) resolved[name] = fallbacks[name]
  for (const name of names) {
    const value = given[name]
    if (value === undefined) {
      if (name === "baseUrl" || name === "applicationId") refusals.push({ setting: label(name), reason: "is not set" })
      continue
    }
    const parsed = settings[name].parse(value, line)
    if (!parsed.ok) refusals.push({ setting: label(name), reason: parsed.reason })
    else resolved[name] = parsed.value
  }
  const [first, ...others] = refusals
  if (first !== undefined) return refused([first, ...others])
  const service = resolved as { -readonly [K in Name]: Settings<S, D>[K] }
  service.authUrl ??= service.baseUrl
  service.authenticateUrl ??= service.baseUrl
  const broken = between(service, line)
  return broken === undefined
    ? { ok: true, value: service }
    : refused([{ setting: label(broken[0]), reason: broken[1] }])
}

/** The retry policy a client's settings describe, in milliseconds. */
export const retryPolicyOf = <D>(
  settings: Pick<Settings<unknown, D>, "maxRetries" | "retryBaseDelay" | "retryMaxDelay" | "retryRateLimited">,
  toMillis: (duration: D) => number
): RetryPolicy => ({
  maxRetries: settings.maxRetries,
  baseDelayMillis: toMillis(settings.retryBaseDelay),
  maxDelayMillis: toMillis(settings.retryMaxDelay),
  retryRateLimited: settings.retryRateLimited
})

/** Every refusal as one failure: the first as `setting` and `reason`, the rest as `others`. */
export const invalidConfigOf = ([first, ...others]: readonly [Refusal, ...Array<Refusal>]): InvalidConfig => ({
  _tag: "InvalidConfig",
  ...first,
  ...(others.length > 0 ? { others } : {})
})

/**
 * What the environment gives for every setting, from each variable's text as `read` finds it
 * (unset or blank: `undefined`; the rest trimmed). A setting read from several variables (a client
 * certificate's parts) is an object of those that are set, or `undefined` when none is.
 */
export const givenFromVariables = (read: (variable: string) => string | undefined): Given => {
  const text = (variable: string) => {
    const value = read(variable)?.trim()
    return value === undefined || value === "" ? undefined : value
  }
  const given: Record<string, unknown> = {}
  for (const name of names) {
    const parts = settings[name].parts
    if (parts === undefined) {
      given[name] = text(settings[name].variable)
      continue
    }
    const set = Object.entries(parts).flatMap(([field, variable]) => {
      const value = text(variable)
      return value === undefined ? [] : [[field, value] as const]
    })
    given[name] = set.length === 0 ? undefined : Object.fromEntries(set)
  }
  return given
}
