/**
 * The Promise client's rules, once for both lines: what a JavaScript caller's options may be, the
 * token's metadata a caller is shown, the environment read as text, and the calls a client has
 * running (so that `close()` ends them all at once and every later call is refused). Each line's
 * `effect-clinical/promise` runs the calls on its own runtime over these.
 */
import { isAbortSignal } from "./callerValues.js"
import type { SettingRefusal } from "./errors.js"
import type { AccessToken } from "./token/accessToken.js"

/** Options of every call. */
export interface CallOptions {
  /** Aborting it interrupts the call, aborts the request on the socket, and rejects with its reason. */
  readonly signal?: AbortSignal | undefined
}

/** The types a line's Promise client is written in: its PersonUid input, results, operations and Redacted. */
export interface ClientTypes {
  readonly personUid: unknown
  /** A person-data call's options: the date range (and `redact`), with {@link CallOptions}. */
  readonly getOptions: CallOptions
  readonly medications: unknown
  readonly items: unknown
  readonly operation: unknown
  readonly credentials: unknown
  /** What `authenticate` resolves to: the PersonUid, `Redacted`. */
  readonly authenticated: unknown
}

/**
 * A client's methods that decode nothing with a Schema, over a line's {@link ClientTypes}; each
 * line's `Client` adds `medicationsAs` and `getAs`, written with its own Schema.
 */
export interface ClientMethods<T extends ClientTypes> {
  /** The person's medications, each kept whole. */
  readonly medications: (personUid: T["personUid"], options?: T["getOptions"]) => Promise<T["medications"]>
  /** A person's PersonUid from their pass code and date of birth. Store it: every data call needs it. */
  readonly authenticate: (credentials: T["credentials"], options?: CallOptions) => Promise<T["authenticated"]>
  /** The person's items of any person-data operation (`PersonData.ethnicities`, ...), each kept whole. */
  readonly get: (
    operation: T["operation"],
    personUid: T["personUid"],
    options?: T["getOptions"]
  ) => Promise<T["items"]>
  /** The current token's metadata (obtaining a token if there is none): a quick check of the settings. */
  readonly token: (options?: CallOptions) => Promise<TokenMetadata>
  /** Releases everything (the connection pool, the refresh fibers). Calls after it reject. */
  readonly close: () => Promise<void>
  /** `await using clinical = createClinicalClient(...)` closes it at the end of the block. */
  readonly [Symbol.asyncDispose]: () => Promise<void>
}

/** The levels the library logs at, from the most to the least detailed; `none` logs nothing. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "none"] as const

export type LogLevelName = typeof LOG_LEVELS[number]

/** One line the library logs. It never holds a secret or a PersonUid. */
export interface LogEntry {
  readonly level: Exclude<LogLevelName, "none">
  readonly message: string
  /** What the line is about: a refresh reason, an error's tag, a retry's cause and delay, ... */
  readonly annotations: Readonly<Record<string, unknown>>
  readonly date: Date
}

/**
 * How the client logs, for clients created without Effect. Silent unless asked, as a Node SDK is:
 * every failure reaches the caller as a rejection, and nothing is ever written to stdout.
 */
export interface LoggingOptions {
  /** Where the library's log lines go. Default: standard error, in logfmt, once `logLevel` asks for lines. */
  readonly logger?: ((entry: LogEntry) => void) | undefined
  /**
   * The lowest level logged. Default `none` without a `logger` (nothing is logged) and `info` with
   * one. `info` shows only the library's warnings (a token refresh that failed, a lifetime cut);
   * `debug` adds every refresh and retry.
   */
  readonly logLevel?: LogLevelName | undefined
}

/** Why a client's logging options cannot be used, or `undefined`. */
export const loggingRefusal = (options: {
  readonly logLevel?: unknown
  readonly logger?: unknown
}): SettingRefusal | undefined => {
  if (options.logLevel !== undefined && !LOG_LEVELS.includes(options.logLevel as LogLevelName)) {
    return { setting: "logLevel", reason: "must be one of debug, info, warn, error, none" }
  }
  if (options.logger !== undefined && typeof options.logger !== "function") {
    return { setting: "logger", reason: "must be a function that takes a log entry" }
  }
  return undefined
}

/** The level a client logs at: as asked, else `info` with a logger and nothing without one. */
export const logLevelOf = (options: { readonly logLevel?: LogLevelName | undefined; readonly logger?: unknown }) =>
  options.logLevel ?? (options.logger === undefined ? "none" : "info")

/** Why undici's Agent options cannot be used, or `undefined`. */
export const agentOptionsRefusal = (agentOptions: unknown): SettingRefusal | undefined =>
  agentOptions === undefined || (typeof agentOptions === "object" && agentOptions !== null)
    ? undefined
    : { setting: "agentOptions", reason: "must be an object of undici Agent options" }

/** Why a client's options are not options at all, or `undefined`. */
export const clientOptionsRefusal = (options: unknown): SettingRefusal | undefined =>
  typeof options === "object" && options !== null
    ? undefined
    : { setting: "options", reason: "must be an object of client options" }

/** A call's options refused: the field and why (each line makes it its `InvalidRequest`, operation `client`). */
export interface CallRefusal {
  readonly field: string
  readonly reason: string
}

/** Why a call's options cannot be used (JavaScript callers can pass anything), or `undefined`. */
export const callOptionsRefusal = (options: unknown): CallRefusal | undefined => {
  if (options === undefined || options === null) return undefined
  if (typeof options !== "object") return { field: "options", reason: "must be an object such as { signal }" }
  const signal = (options as { readonly signal?: unknown }).signal
  return signal === undefined || isAbortSignal(signal)
    ? undefined
    : { field: "signal", reason: "must be an AbortSignal" }
}

/** A signal's getters threw: the caller's options could not be read. */
export const UNREADABLE_SIGNAL: CallRefusal = { field: "signal", reason: "could not be read as an AbortSignal" }

/** Whether the caller's signal is aborted now; a signal whose `aborted` throws (a look-alike) is not. */
export const abortedNow = (signal: AbortSignal | undefined): boolean => {
  try {
    return signal?.aborted === true
  } catch {
    return false
  }
}

/** What is known of the current token, without the token itself. */
export type TokenMetadata = Pick<
  AccessToken<unknown>,
  "generation" | "issuedAt" | "expiresAt" | "lifetimeMillis" | "serverLifetimeMillis" | "serverClockSkewMillis"
>

/** A token's metadata, the token left out. */
export const metadataOf = (token: AccessToken<unknown>): TokenMetadata => ({
  generation: token.generation,
  issuedAt: token.issuedAt,
  expiresAt: token.expiresAt,
  lifetimeMillis: token.lifetimeMillis,
  serverLifetimeMillis: token.serverLifetimeMillis,
  serverClockSkewMillis: token.serverClockSkewMillis
})

/**
 * An environment's variables as text, or the refusal of one of ours that is not text (a JavaScript
 * caller may hand a number or a URL where an environment holds text; anything not ours is not ours
 * to read).
 */
export const environmentTexts = (env: unknown): Map<string, string> | SettingRefusal => {
  if (typeof env !== "object" || env === null) {
    return { setting: "env", reason: "must be an object of environment variables" }
  }
  const texts = new Map<string, string>()
  for (const [name, value] of Object.entries(env)) {
    if (typeof value === "string") texts.set(name, value)
    else if (value !== undefined && name.startsWith("CLINICAL_")) {
      return { setting: name, reason: "must be a string, as an environment variable is" }
    }
  }
  return texts
}

/** How a call may start: with its controller (and the caller's signal it follows), or refused. */
export type Start =
  | { readonly _tag: "Go"; readonly controller: AbortController; readonly signal: AbortSignal | undefined }
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Refused"; readonly refusal: CallRefusal }
  | { readonly _tag: "Aborted"; readonly reason: unknown }

/**
 * The calls a client has running, each by the controller that ends it (following the caller's
 * signal): `close()` aborts them all at once, and no call starts after it.
 */
export class RunningCalls {
  private readonly running = new Set<AbortController>()
  private isClosed = false
  private closing: Promise<void> | undefined

  /** A call asks to start with the caller's `options` (read defensively: a getter may throw). */
  start(options: unknown): Start {
    if (this.isClosed) return { _tag: "Closed" }
    const controller = new AbortController()
    let signal: AbortSignal | undefined
    try {
      const refusal = callOptionsRefusal(options)
      if (refusal !== undefined) return { _tag: "Refused", refusal }
      signal = (options as { readonly signal?: AbortSignal } | undefined)?.signal
      if (signal?.aborted === true) return { _tag: "Aborted", reason: signal.reason }
      // Stryker disable next-line BooleanLiteral: equivalent, the listener goes with the call's controller either way
      signal?.addEventListener("abort", () => controller.abort(), { once: true, signal: controller.signal })
    } catch {
      return { _tag: "Refused", refusal: UNREADABLE_SIGNAL }
    }
    this.running.add(controller)
    return { _tag: "Go", controller, signal }
  }

  /** A call ended: its controller let go (with the listener on the caller's signal). */
  ended(controller: AbortController): void {
    this.running.delete(controller)
    controller.abort()
  }

  /** Whether the client was closed. */
  closed(): boolean {
    return this.isClosed
  }

  /** Closes the client once: every running call ends now, then `dispose` releases the rest. */
  close(dispose: () => Promise<void>): Promise<void> {
    this.closing ??= (async () => {
      this.isClosed = true
      for (const controller of this.running) controller.abort()
      await dispose()
    })()
    return this.closing
  }
}
