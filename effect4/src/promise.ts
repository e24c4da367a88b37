/**
 * effect-clinical/promise: the client for code that is not written in Effect (Express, Fastify,
 * NestJS, scripts), on this line's Effect 4 runtime.
 *
 * ```ts
 * const clinical = createClinicalClient({ baseUrl, authUrl, applicationId })
 * const { medications } = await clinical.medications(personUid)
 * await clinical.close()
 * ```
 *
 * One client is one runtime, one token cache and one connection pool: create it once per process
 * and share it. A bad setting throws `InvalidConfig` at once. A failed call rejects with the
 * library's own error (`instanceof ApiError`, `._tag`, the same message, JSON without secrets),
 * never a wrapper. Every method takes `{ signal }`: aborting interrupts the call and the request on
 * the socket, and the call rejects with the signal's reason. The rules (options, closing, the
 * environment, the token's metadata) are the core's (core/promiseClient.ts), as the Effect 3
 * line's client has them.
 */
// First: below the line's Node.js floor, importing it throws one clear error (see nodeFloor).
import "./internal/nodeFloor.js"

import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as CallerValues from "../../core/callerValues.js"
import type { SettingRefusal } from "../../core/errors.js"
import { nameOf } from "../../core/operationName.js"
import * as Core from "../../core/promiseClient.js"
import * as ClinicalClient from "./ClinicalClient.js"
import * as ClinicalConfig from "./ClinicalConfig.js"
import { ClientClosed, type ClinicalError, InvalidConfig, InvalidRequest } from "./ClinicalError.js"
import * as HttpTransport from "./HttpTransport.js"
import * as Telemetry from "./internal/observability/telemetry.js"
import * as MedicationService from "./MedicationService.js"
import * as PersonAuthentication from "./PersonAuthentication.js"
import * as PersonData from "./PersonData.js"
import * as TokenService from "./TokenService.js"
import * as TokenStore from "./TokenStore.js"

export {
  type AnyClinicalError,
  ApiError,
  BadRequest,
  CircuitOpen,
  ClientClosed,
  type ClinicalError,
  InvalidConfig,
  InvalidRequest,
  isClinicalError,
  isRequestError,
  RateLimited,
  ResponseDecodeError,
  ServerError,
  TokenExpired,
  TokenStoreError,
  TransportError,
  Unauthorized,
  UnexpectedStatus
} from "./ClinicalError.js"

/** The person-data operations (`PersonData.ethnicities`, ...) and `PersonData.operation` for others. */
export * as PersonData from "./PersonData.js"

/** The Redis adapters of a shared token store: `TokenStore.ioredis(client)`, `TokenStore.nodeRedis(client)`. */
export * as TokenStore from "./TokenStore.js"

/** Options of every call. */
export type CallOptions = Core.CallOptions

/** Options of a person-data call: the optional date range, and the signal. */
export type GetOptions = PersonData.GetOptions & CallOptions

/** What is known of the current token, without the token itself. */
export type TokenMetadata = Core.TokenMetadata

/** A client. Create one per process with {@link createClinicalClient} and share it. */
export interface Client extends
  Core.ClientMethods<{
    readonly personUid: PersonData.PersonUid
    readonly getOptions: GetOptions
    readonly medications: MedicationService.MedicationResult<MedicationService.Medication>
    readonly items: PersonData.Result<PersonData.Item>
    readonly operation: PersonData.Operation
    readonly credentials: PersonAuthentication.Credentials
    readonly authenticated: Redacted.Redacted<string>
  }>
{
  /** The person's medications, each decoded with `schema`. */
  readonly medicationsAs: <S extends Schema.Decoder<unknown>>(
    schema: S,
    personUid: PersonData.PersonUid,
    options?: GetOptions
  ) => Promise<MedicationService.MedicationResult<S["Type"]>>
  /** The person's items of any person-data operation, each decoded with `schema`. */
  readonly getAs: <S extends Schema.Decoder<unknown>>(
    operation: PersonData.Operation,
    schema: S,
    personUid: PersonData.PersonUid,
    options?: GetOptions
  ) => Promise<PersonData.Result<S["Type"]>>
}

/** The levels the library logs at, from the most to the least detailed; `none` logs nothing. */
export type LogLevelName = Core.LogLevelName

/** One line the library logs (core/promiseClient). */
export type LogEntry = Core.LogEntry

/** How the client logs (core/promiseClient). */
export type LoggingOptions = Core.LoggingOptions

/** What a client is built with besides its settings: the connection pool's options and a shared token store. */
export interface ClientOptions extends LoggingOptions {
  /** Options of the undici `Agent` (the connection pool) and the network settings beside the client's. */
  readonly agentOptions?: HttpTransport.UndiciOptions | undefined
  /** A token shared by every instance of a fleet through Redis, e.g. `{ redis: TokenStore.ioredis(new Redis(url)) }`. */
  readonly tokenStore?: TokenStore.RedisOptions | undefined
}

/** What {@link createClinicalClient} takes: the settings of `ClinicalConfig`, the Agent's options, logging, a token store. */
export interface Options extends ClinicalConfig.Options, ClientOptions {}

/** The first typed failure of an exit, thrown as itself; an abort as the signal's reason; a defect as it is. */
const settle = <A, E>(exit: Exit.Exit<A, E>, signal: AbortSignal | undefined): A => {
  if (Exit.isSuccess(exit)) return exit.value
  if (signal?.aborted === true && Cause.hasInterrupts(exit.cause)) throw signal.reason
  throw Cause.squash(exit.cause)
}

const LEVELS: Readonly<Record<LogLevelName, LogLevel.LogLevel>> = {
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  error: "Error",
  none: "None"
}

const LOGGER_LEVELS: CallerValues.Levels<LogLevel.LogLevel> = {
  info: "Info",
  warn: "Warn",
  error: "Error",
  lessThan: (a, b) => LogLevel.isLessThan(a, b)
}

/**
 * The logging of a client: the application's logger in place of Effect's, and the level. A line
 * the logger throws on is dropped and counted (`clinical_log_lines_dropped_total`): an
 * application's logger never changes what a call does.
 */
const loggingLayer = ({ logLevel, logger }: LoggingOptions): Layer.Layer<never> => {
  const level = Layer.succeed(References.MinimumLogLevel, LEVELS[Core.logLevelOf({ logLevel, logger })])
  // Effect's own logger writes to stdout, which is an application's output (a CLI's, a pipe's).
  if (logger === undefined) return Layer.merge(level, Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)]))
  const routed = Logger.make(({ date, fiber, logLevel: entryLevel, message }) => {
    const dropped = () => Telemetry.logLinesDropped.updateUnsafe(1, fiber.context)
    try {
      const returned: unknown = logger({
        level: CallerValues.levelName(entryLevel, LOGGER_LEVELS),
        message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
        annotations: { ...fiber.getRef(References.CurrentLogAnnotations) },
        date
      })
      // An async logger fails later, as a rejected promise: caught too, or it would end the process.
      if (CallerValues.isThenable(returned)) returned.then(undefined, dropped)
    } catch {
      dropped()
    }
  })
  return Layer.merge(level, Logger.layer([routed]))
}

/**
 * A PersonUid's own text, to store it (`authenticate` gives it `Redacted`, so that it is never
 * logged by mistake: `JSON.stringify` of it is `"<redacted>"`). Keep it as a patient identifier.
 */
export const reveal = (value: Redacted.Redacted<string>): string => Redacted.value(value)

/** Throws a refusal of the core's as `InvalidConfig`. */
const refuseWith = (refusal: SettingRefusal | undefined): void => {
  if (refusal !== undefined) throw new InvalidConfig(refusal)
}

/** The shared token store the options name, as a layer; none by default. */
const storeLayer = (options: TokenStore.RedisOptions | undefined): Layer.Layer<TokenStore.TokenStore> => {
  if (options === undefined) return Layer.empty as Layer.Layer<TokenStore.TokenStore>
  const store = TokenStore.redis(options)
  if (Result.isFailure(store)) throw store.failure
  return Layer.succeed(TokenStore.TokenStore, store.success)
}

/** A client over resolved settings (already checked, so the layer cannot fail on them). */
const clientOf = (config: ClinicalConfig.Service, options: ClientOptions): Client => {
  refuseWith(Core.clientOptionsRefusal(options))
  refuseWith(Core.agentOptionsRefusal(options.agentOptions))
  refuseWith(Core.loggingRefusal(options))
  const settings = Layer.succeed(ClinicalConfig.ClinicalConfig, config)
  const runtime = ManagedRuntime.make(
    ClinicalClient.layerWith(settings).pipe(
      Layer.provide(HttpTransport.layerUndiciFromConfig(options.agentOptions).pipe(Layer.provide(settings))),
      Layer.provide(storeLayer(options.tokenStore)),
      Layer.merge(loggingLayer(options)),
      Layer.orDie
    )
  )
  const calls = new Core.RunningCalls()
  const run = <A>(
    operation: string,
    effect: Effect.Effect<A, ClinicalError, ClinicalClient.Services>,
    options?: CallOptions
  ): Promise<A> => {
    const start = calls.start(options)
    switch (start._tag) {
      case "Closed":
        return Promise.reject(new ClientClosed({ operation, whileRunning: false }))
      case "Refused":
        return Promise.reject(new InvalidRequest({ operation: "client", ...start.refusal }))
      case "Aborted":
        return Promise.reject(start.reason)
    }
    const { controller, signal } = start
    return runtime.runPromiseExit(effect, { signal: controller.signal }).then((exit) => {
      calls.ended(controller)
      const aborted = Core.abortedNow(signal)
      if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) && !aborted && calls.closed()) {
        throw new ClientClosed({ operation, whileRunning: true })
      }
      return settle(exit, aborted ? signal : undefined)
    })
  }
  // Every running call ends now (its request aborted on the socket), not after its timeout.
  const close = () => calls.close(() => runtime.dispose())
  return {
    medications: (personUid, options) =>
      run(PersonData.medications.name, MedicationService.get(personUid, options), options),
    medicationsAs: (schema, personUid, options) =>
      run(PersonData.medications.name, MedicationService.getAs(schema, personUid, options), options),
    authenticate: (credentials, options) =>
      run("authenticate", PersonAuthentication.authenticate(credentials), options),
    get: (operation, personUid, options) =>
      run(nameOf(operation), PersonData.get(operation, personUid, options), options),
    getAs: (operation, schema, personUid, options) =>
      run(nameOf(operation), PersonData.getAs(operation, schema, personUid, options), options),
    token: (options) =>
      run("token", TokenService.TokenService.use((tokens) => Effect.map(tokens.get, Core.metadataOf)), options),
    close,
    [Symbol.asyncDispose]: close
  }
}

/** The settings a check found, or its typed failure thrown. */
const checked = (exit: Exit.Exit<ClinicalConfig.Service, InvalidConfig>): ClinicalConfig.Service =>
  settle(exit, undefined)

/**
 * A client from an options object (`baseUrl` and `applicationId` required; see the README's
 * configuration table). Throws `InvalidConfig` naming every bad setting.
 */
export const createClinicalClient = (options: Options): Client =>
  clientOf(checked(Effect.runSyncExit(ClinicalConfig.make(options))), options)

/**
 * A client from `CLINICAL_*` variables (`process.env` unless given). Throws `InvalidConfig`
 * naming the variable that is not set or whose value is refused.
 */
export const createClinicalClientFromEnv = (
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: ClientOptions = {}
): Client => {
  const texts = Core.environmentTexts(env)
  if (!(texts instanceof Map)) throw new InvalidConfig(texts)
  // Node's own channel for a mistake in how a program is set up, before the settings are checked:
  // a misspelled required variable is why one is missing.
  for (const warning of ClinicalConfig.misspellingWarnings([...texts.keys()])) {
    process.emitWarning(warning, { code: "CLINICAL_UNKNOWN_SETTING" })
  }
  return clientOf(checked(Effect.runSyncExit(ClinicalConfig.fromVariables((name) => texts.get(name)))), options)
}

/** Counted lines a logger threw on: for tests and dashboards of a client without Effect. */
export const logLinesDropped: Metric.Metric<number, unknown> = Telemetry.logLinesDropped
