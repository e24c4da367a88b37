/**
 * What a user may give the client and what every service reads: the options (each one's meaning
 * and default, documented once for both Effect lines), the resolved settings, and how a line holds
 * secrets and durations. How each is read and checked is settings.ts's.
 */
import type * as Network from "../transport/network.js"
import * as Trust from "../transport/trust.js"

/** How a line holds secrets and durations, and reads the forms of them its users write. */
export interface Line<S, D> extends Trust.Secrets<S> {
  /** A duration in the line's own forms (its `Duration`, `"10 seconds"`, a number of ms), or `undefined`. */
  readonly decodeDuration: (value: unknown) => D | undefined
  readonly millis: (millis: number) => D
  readonly toMillis: (duration: D) => number
  /** Whether `a` is longer than `b`, exactly (Effect's durations hold nanoseconds a double cannot). */
  readonly greaterThan: (a: D, b: D) => boolean
}

/**
 * A duration as a setting takes it: anything the line's `Duration` reads (`"10 seconds"`, a number
 * of milliseconds, a `Duration`) or the short form (`"30s"`, `"2m"`, `"1500ms"`, `"1h"`, `"1d"`).
 */
export type Duration<DurationInput> = DurationInput | `${number}${"ms" | "s" | "m" | "h" | "d"}`

/**
 * What a user passes to a line's `ClinicalConfig.layer` (`S`: the line's `Redacted`; `DurationInput`:
 * what its `Duration` reads). Only `baseUrl` and `applicationId` are required.
 */
export interface Options<S, DurationInput> {
  /** The data host, e.g. `https://openapi.intelichart.com`. A path prefix is kept. */
  readonly baseUrl: string | URL
  /** The token host, e.g. `https://openapiauth.intelichart.com`. Defaults to `baseUrl`. */
  readonly authUrl?: string | URL | undefined
  /** The GUID the vendor issued. It alone obtains a token: pass it `Redacted` where you can. */
  readonly applicationId: string | S
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
  readonly tokenTimeout?: Duration<DurationInput> | undefined
  /** Longest wait for one data request attempt. Default 30 seconds. */
  readonly requestTimeout?: Duration<DurationInput> | undefined
  /**
   * Soft refresh window: this close to expiry, a caller starts a background refresh and still gets
   * the current token. The window used is the smaller of this and half the token's lifetime.
   * Default 5 minutes.
   */
  readonly softRefreshWindow?: Duration<DurationInput> | undefined
  /**
   * Hard refresh window: this close to expiry, callers wait for a new token. The window used is the
   * smaller of this and a tenth of the token's lifetime. Default 30 seconds.
   */
  readonly hardRefreshWindow?: Duration<DurationInput> | undefined
  /** Retries after the first attempt of a call (transport failures, timeouts, 429, 500, 502-504). 0 turns retries off. Default 3. */
  readonly maxRetries?: number | undefined
  /** First backoff delay; each retry doubles it, with jitter (half to all of it). Default 1 second. */
  readonly retryBaseDelay?: Duration<DurationInput> | undefined
  /** Cap on one backoff delay (a longer `Retry-After` is still honoured). Default 30 seconds. */
  readonly retryMaxDelay?: Duration<DurationInput> | undefined
  /**
   * Cap on a server's `Retry-After`: the longest the client waits before one retry, and the longest
   * it remembers a throttled token endpoint. At most 1 hour. Default 60 seconds.
   */
  readonly maxRetryAfter?: Duration<DurationInput> | undefined
  /**
   * Cap on a token's lifetime: a longer one (a `TOKEN_EXPIRES` years ahead) is cut to this, with a
   * warning. The documented lifetime is one hour. Default 24 hours.
   */
  readonly maxTokenLifetime?: Duration<DurationInput> | undefined
  /** Longest a whole call may take, retries and waits included. Default 60 seconds. */
  readonly deadline?: Duration<DurationInput> | undefined
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
  readonly circuitBreakerCooldown?: Duration<DurationInput> | undefined
  /** The breaker's longest cool-down. Default 2 seconds. */
  readonly circuitBreakerMaxCooldown?: Duration<DurationInput> | undefined
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
  readonly proxy?: string | URL | S | false | undefined
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
  readonly clientCertificate?:
    | { readonly cert: string; readonly key: string | S; readonly passphrase?: string | S | undefined }
    | { readonly pfx: Uint8Array | string; readonly passphrase?: string | S | undefined }
    | undefined
  /** Connections the default transport keeps open to one host, at most. Default: no bound (undici's). */
  readonly connections?: number | undefined
  /** How long an idle connection is kept for the next request. Default 4 seconds (undici's). */
  readonly keepAliveTimeout?: Duration<DurationInput> | undefined
  /** Longest wait for a connection (TCP and TLS) to be made. Default 10 seconds (undici's). */
  readonly connectTimeout?: Duration<DurationInput> | undefined
}

/**
 * The resolved settings every service reads (`S` a secret, `D` a duration, as the line holds them),
 * the default transport's network settings among them.
 */
export interface Settings<S, D> extends Network.Settings<S, D> {
  /** Data host, no trailing slash. */
  readonly baseUrl: string
  /** Token host, no trailing slash. */
  readonly authUrl: string
  readonly applicationId: S
  readonly tokenPath: string
  /** Authenticate host, no trailing slash. */
  readonly authenticateUrl: string
  readonly authenticatePath: string
  readonly dateOfBirthFormat: string
  readonly tokenTimeout: D
  readonly requestTimeout: D
  readonly softRefreshWindow: D
  readonly hardRefreshWindow: D
  readonly maxRetries: number
  readonly retryBaseDelay: D
  readonly retryMaxDelay: D
  readonly maxRetryAfter: D
  readonly maxTokenLifetime: D
  readonly deadline: D
  readonly retryWrites: boolean
  readonly retryRateLimited: boolean
  readonly maxConcurrentRequests: number
  readonly adaptiveConcurrency: boolean
  readonly initialConcurrency: number
  readonly retryBudget: boolean
  readonly retryBudgetRatio: number
  readonly circuitBreakerThreshold: number
  readonly circuitBreakerCooldown: D
  readonly circuitBreakerMaxCooldown: D
  readonly maxResponseBytes: number
  readonly tracePropagation: boolean
}

export type Name = keyof Settings<unknown, unknown>
