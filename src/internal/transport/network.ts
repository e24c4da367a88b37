/**
 * The default transport's way out of the machine: its settings (a proxy, a private CA, a client
 * certificate, on top of undici's `Agent` options), checked and turned into undici dispatchers,
 * one per way out, and the request's route, which failures are explained by. The files the
 * settings name are read here, once, when the layer is built.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Fs from "node:fs"
import type * as Tls from "node:tls"
import type * as Undici from "undici"
import type { Route } from "../../../core/transport/connectFailure.js"
import { InvalidConfig } from "../../ClinicalError.js"
import * as Proxy from "./proxy.js"
import * as Trust from "./trust.js"
import { describe, invalidArgument } from "./wire.js"

/** What the default transport takes besides undici's `Agent` options. */
export interface NetworkOptions {
  /**
   * The proxy: a URL (`http://user:password@proxy.example:3128`, credentials percent-encoded),
   * `false` (or `"none"`) for none. Default: the environment's `HTTPS_PROXY`, `HTTP_PROXY`,
   * `ALL_PROXY` (upper or lower case), as curl reads them.
   */
  readonly proxy?: string | URL | Redacted.Redacted<string> | false | undefined
  /** Targets that bypass the proxy, as `NO_PROXY` writes them. Default: the environment's `NO_PROXY`. */
  readonly noProxy?: string | undefined
  /** A CA to trust besides Node's roots: its PEM text, or a PEM file's path. */
  readonly ca?: string | Redacted.Redacted<string> | undefined
  /** Trust `ca` alone, not Node's roots (nor `NODE_EXTRA_CA_CERTS`). Default false. */
  readonly caOnly?: boolean | undefined
  /**
   * A client certificate for servers that ask for one (mutual TLS): `{ cert, key, passphrase? }`
   * (PEM text or file paths), or `{ pfx, passphrase? }` (PKCS#12 bytes or a file path).
   */
  readonly clientCertificate?:
    | {
      readonly cert: string
      readonly key: string | Redacted.Redacted<string>
      readonly passphrase?: string | Redacted.Redacted<string> | undefined
    }
    | { readonly pfx: Uint8Array | string; readonly passphrase?: string | Redacted.Redacted<string> | undefined }
    | undefined
}

/** What `HttpTransport.layerUndici` takes: undici's `Agent` options and the {@link NetworkOptions}. */
export type UndiciOptions = Undici.Agent.Options & NetworkOptions

const NETWORK_KEYS = ["proxy", "noProxy", "ca", "caOnly", "clientCertificate"] as const

/** The network settings of a client's configuration (`ClinicalConfig`), already read. */
export interface Settings {
  /** The proxy: the environment's (`FromEnvironment`), none (`Direct`), or one (`Through`). */
  readonly proxy: Proxy.ProxySetting
  readonly noProxy: string | undefined
  /** PEM text or a file's path. */
  readonly ca: string | undefined
  readonly caOnly: boolean
  readonly clientCertificate: Trust.ClientCertificate | undefined
  readonly connections: number | undefined
  readonly keepAliveTimeout: Duration.Duration | undefined
  readonly connectTimeout: Duration.Duration | undefined
}

/** The default transport's options that a client's settings give (what is not set is left to undici). */
export const optionsOf = (settings: Settings): UndiciOptions => {
  const options: Record<string, unknown> = { proxy: settings.proxy, caOnly: settings.caOnly }
  if (settings.noProxy !== undefined) options.noProxy = settings.noProxy
  if (settings.ca !== undefined) options.ca = settings.ca
  if (settings.clientCertificate !== undefined) options.clientCertificate = settings.clientCertificate
  if (settings.connections !== undefined) options.connections = settings.connections
  if (settings.keepAliveTimeout !== undefined) {
    // Also the most a server's `Keep-Alive: timeout=` hint may make it: the setting is the longest wait.
    options.keepAliveTimeout = options.keepAliveMaxTimeout = Duration.toMillis(settings.keepAliveTimeout)
  }
  if (settings.connectTimeout !== undefined) options.connectTimeout = Duration.toMillis(settings.connectTimeout)
  // `proxy` holds a setting already read, which the options take as they take a URL.
  return options as UndiciOptions
}

type Environment = Readonly<Record<string, string | undefined>>

/** The dispatchers of a transport, and how a request is routed through them. */
export interface Network {
  /** The dispatcher a request to `origin` goes through, and its route (for what a failure means). */
  readonly routeOf: (origin: string) => { readonly dispatcher: Undici.Dispatcher; readonly route: Route }
  /** Closes every dispatcher. */
  readonly close: () => Promise<void>
}

const refused = (setting: string, reason: string) => new InvalidConfig({ setting, reason })

/** Largest file a setting may name: a CA bundle or a certificate is kilobytes. */
const MAX_FILE_BYTES = 1024 * 1024

/**
 * The bytes of the file a setting names: a regular file of at most {@link MAX_FILE_BYTES} (not a
 * device that never ends, nor a directory). The reason names the setting and the error's code,
 * never the file's text.
 */
const fileOf = (setting: string, path: string): Either.Either<Buffer, InvalidConfig> => {
  try {
    const stat = Fs.statSync(path)
    if (!stat.isFile()) return Either.left(refused(setting, "names something that is not a file"))
    if (stat.size > MAX_FILE_BYTES) return Either.left(refused(setting, "names a file larger than 1 MiB"))
    return Either.right(Fs.readFileSync(path))
  } catch (cause) {
    const code = (cause as { readonly code?: unknown }).code
    return Either.left(
      refused(setting, `names a file that cannot be read (${typeof code === "string" ? code : "error"})`)
    )
  }
}

/** A setting's text: itself when it is PEM, else the file it names. */
const pemOrFile = (setting: string, value: string): Either.Either<string, InvalidConfig> =>
  Trust.isPem(value) ? Either.right(value) : Either.map(fileOf(setting, value), (bytes) => bytes.toString("utf8"))

/** A PKCS#12 bundle: its bytes, or the file it names. */
const bytesOrFile = (setting: string, value: Uint8Array | string): Either.Either<Buffer, InvalidConfig> =>
  value instanceof Uint8Array ? Either.right(Buffer.from(value)) : fileOf(setting, value)

/**
 * What the settings add to undici's connectors, as TLS contexts built once, when the layer is
 * built: given a `ca` (the roots and the CA: 145 certificates), Node would otherwise build a
 * context on every connection (26 ms of CPU each, against 2.6 with the default one).
 */
interface Contexts {
  /** For the service: the CAs trusted and the client certificate. */
  readonly target: { readonly secureContext?: Tls.SecureContext }
  /** For an https proxy: the CAs trusted, no client certificate. */
  readonly proxy: { readonly secureContext?: Tls.SecureContext }
  /** Whether anything is set (an `agentOptions.connect` function cannot take it). */
  readonly any: boolean
}

/** The TLS contexts a client's settings give undici's connectors (none at all when nothing is set). */
const contextsOf = (
  options: NetworkOptions,
  env: Environment
): Either.Either<Contexts, InvalidConfig> =>
  Either.gen(function*() {
    let ca: Array<string> | undefined
    if (options.ca !== undefined) {
      const setting = yield* Either.mapLeft(Trust.caSetting(options.ca), (reason) => refused("ca", reason))
      const pem = yield* pemOrFile("ca", setting)
      // Node ignores an unreadable NODE_EXTRA_CA_CERTS with a warning of its own: so does this.
      const extraPath = env.NODE_EXTRA_CA_CERTS
      const extra = extraPath === undefined || extraPath === ""
        ? undefined
        : Either.getOrUndefined(pemOrFile("", extraPath))
      ca = [
        ...yield* Either.mapLeft(
          Trust.trustedCas(pem, options.caOnly === true, extra),
          (reason) => refused("ca", reason)
        )
      ]
    } else if (options.caOnly === true) {
      return yield* Either.left(refused("caOnly", "needs ca: the CA to trust alone"))
    }
    let client: Trust.ClientTls = {}
    if (options.clientCertificate !== undefined) {
      const certificate = yield* Either.mapLeft(
        Trust.clientCertificate(options.clientCertificate),
        (reason) => refused("clientCertificate", reason)
      )
      const passphrase = certificate.passphrase === undefined
        ? {}
        : { passphrase: Redacted.value(certificate.passphrase) }
      client = certificate._tag === "Pkcs12"
        ? { pfx: yield* bytesOrFile("clientCertificate.pfx", certificate.pfx), ...passphrase }
        : {
          cert: yield* pemOrFile("clientCertificate.cert", certificate.cert),
          key: yield* pemOrFile("clientCertificate.key", Redacted.value(certificate.key)),
          ...passphrase
        }
    }
    const trusted = ca === undefined ? {} : { ca }
    const target = ca === undefined && options.clientCertificate === undefined
      ? {}
      : {
        secureContext: yield* Either.mapLeft(
          Trust.secureContextOf({ ...trusted, ...client }),
          (reason) => refused(options.clientCertificate === undefined ? "ca" : "clientCertificate", reason)
        )
      }
    const proxy = ca === undefined
      ? {}
      : { secureContext: yield* Either.mapLeft(Trust.secureContextOf(trusted), (reason) => refused("ca", reason)) }
    return { target, proxy, any: ca !== undefined || options.clientCertificate !== undefined }
  })

/**
 * Closes a dispatcher, waiting at most `graceMillis` for what it still has in flight (a tunnel
 * request a proxy never answers, say), then destroys it: a layer's release must end.
 */
const closeWithin = (dispatcher: Undici.Dispatcher, graceMillis: number): Promise<void> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => resolve(dispatcher.destroy().catch(() => {})), graceMillis)
    timer.unref?.()
  })
  return Promise.race([dispatcher.close(), late]).finally(() => clearTimeout(timer))
}

/** How long a closing transport waits for requests still in flight before it destroys its connections. */
const CLOSE_GRACE_MILLIS = 2000

/** undici's connect timeout when none is set: the longest a proxy may take to answer a tunnel request too. */
const DEFAULT_CONNECT_TIMEOUT_MILLIS = 10_000

/**
 * The connector options of the service's connections: the contexts the settings give, under the
 * application's `agentOptions.connect` (an object of undici's connect options). A connector
 * function is taken as it is when nothing is to be added to it; with a CA, a client certificate or
 * a proxy's tunnels (which connect with options, never a function) it would be dropped, so it is
 * refused. Anything else is refused as undici refuses it, by name.
 */
const connectOf = (
  given: Undici.Agent.Options["connect"],
  contexts: Contexts,
  routes: Proxy.Routes
): Either.Either<NonNullable<Undici.Agent.Options["connect"]>, InvalidConfig> => {
  if (typeof given === "function") {
    if (contexts.any) {
      return Either.left(
        refused("agentOptions.connect", "is a function: ca and clientCertificate cannot be added to it")
      )
    }
    return routes.http === undefined && routes.https === undefined
      ? Either.right(given)
      : Either.left(
        refused(
          "agentOptions.connect",
          "is a function: a proxy's tunnels cannot use it (give undici's connect options as an object, or set proxy to none)"
        )
      )
  }
  if (given !== undefined && given !== null && typeof given !== "object") {
    return Either.left(
      refused("agentOptions.connect", "must be undici's connect options (an object) or a connector function")
    )
  }
  return Either.right({ ...contexts.target, ...given })
}

/** Where a client is made to have its options checked; it never connects. */
const CHECKED_ORIGIN = "http://localhost"

/**
 * Throws what undici throws for options it refuses, when the layer is built rather than at the
 * first request: an `Agent` checks a few of its options, each connection's `Client` the rest (a
 * negative `keepAliveTimeout`, say, failed every request with a network error).
 */
const refusedByUndici = (undici: typeof Undici, options: Undici.Agent.Options): void => {
  new undici.Pool(CHECKED_ORIGIN, options).destroy().catch(() => {})
  new undici.Client(CHECKED_ORIGIN, options).destroy().catch(() => {})
}

/**
 * The option undici's refusal names (the first word of its message that is an option given), as
 * `agentOptions.<name>`; `agentOptions` when it names none.
 */
export const refusedOption = (message: string, options: object): string => {
  const named = message.match(/[A-Za-z_$][\w$]*/g)?.find((word) => Object.hasOwn(options, word))
  return named === undefined ? "agentOptions" : `agentOptions.${named}`
}

/** Splits the options into undici's and the network's. */
const splitOptions = (
  options: UndiciOptions
): { readonly agent: Undici.Agent.Options; readonly network: NetworkOptions } => {
  const agent: Record<string, unknown> = { ...options }
  const network: Record<string, unknown> = {}
  for (const key of NETWORK_KEYS) {
    if (key in agent) network[key] = agent[key]
    delete agent[key]
  }
  return { agent: agent as Undici.Agent.Options, network: network as NetworkOptions }
}

/**
 * The dispatchers for `options` in `env` (the process's environment, for the proxy variables and
 * `NODE_EXTRA_CA_CERTS`), or the `InvalidConfig` naming what is refused.
 */
export const make = (
  undici: typeof Undici,
  options: UndiciOptions | undefined,
  env: Environment
): Either.Either<Network, InvalidConfig> =>
  Either.gen(function*() {
    const { agent: agentOptions, network } = splitOptions(options ?? {})
    const setting = network.proxy === undefined
      ? Proxy.FROM_ENVIRONMENT
      : yield* Either.mapLeft(Proxy.proxySetting(network.proxy), (reason) => refused("proxy", reason))
    const routes = yield* Either.mapLeft(
      Proxy.routesOf(setting, network.noProxy, env),
      ([variable, reason]) => refused(variable, reason)
    )
    const contexts = yield* contextsOf(network, env)
    const clientCertificate = network.clientCertificate !== undefined
    const connect = yield* connectOf(agentOptions.connect, contexts, routes)
    refusedByUndici(undici, { ...agentOptions, connect })
    const direct = new undici.Agent({ ...agentOptions, connect })
    const connectTimeout = agentOptions.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MILLIS
    const tunnelOptions = (proxy: Proxy.ProxyEndpoint): Undici.ProxyAgent.Options => {
      const { connect: _, ...rest } = agentOptions
      return {
        ...rest,
        uri: proxy.origin,
        ...(proxy.authorization === undefined ? {} : { token: Redacted.value(proxy.authorization) }),
        // The service's TLS: the contexts and the application's connect options (a function is refused above).
        requestTls: { timeout: connectTimeout, ...(connect as Undici.buildConnector.BuildOptions) },
        proxyTls: { ...contexts.proxy, timeout: connectTimeout },
        // The tunnel request itself: a proxy that accepts the connection and never answers is
        // given the connect timeout, not undici's 300 s wait for headers.
        clientFactory: (origin, options) =>
          new undici.Pool(origin, { ...options, headersTimeout: connectTimeout, bodyTimeout: connectTimeout })
      }
    }
    // Options only a ProxyAgent checks (`auth` beside the URL's credentials, `headers`) are refused
    // now, not by the first request through the proxy, where they died as a defect.
    for (const proxy of [routes.http, routes.https]) {
      if (proxy !== undefined) new undici.ProxyAgent(tunnelOptions(proxy)).destroy().catch(() => {})
    }
    const tunnels = new Map<string, Undici.Dispatcher>()
    const tunnelThrough = (proxy: Proxy.ProxyEndpoint): Undici.Dispatcher => {
      let tunnel = tunnels.get(proxy.origin)
      if (tunnel === undefined) {
        tunnel = new undici.ProxyAgent(tunnelOptions(proxy))
        tunnels.set(proxy.origin, tunnel)
      }
      return tunnel
    }
    // A client talks to two or three origins: each is routed once.
    const routed = new Map<string, { readonly dispatcher: Undici.Dispatcher; readonly route: Route }>()
    const routeOf = (origin: string) => {
      let found = routed.get(origin)
      if (found === undefined) {
        const url = new URL(origin)
        const proxy = Proxy.proxyFor(routes, url)
        found = {
          dispatcher: proxy === undefined ? direct : tunnelThrough(proxy),
          route: {
            host: url.hostname,
            port: url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port),
            https: url.protocol === "https:",
            proxy: proxy?.origin,
            clientCertificate
          }
        }
        if (routed.size < 64) routed.set(origin, found)
      }
      return found
    }
    return {
      routeOf,
      close: () =>
        Promise.all(
          [direct, ...tunnels.values()].map((dispatcher) => closeWithin(dispatcher, CLOSE_GRACE_MILLIS))
        ).then(() => {})
    }
  })

/**
 * The dispatchers of `options` in `env` (read when the effect runs: by default the process's
 * environment), closed with the scope. Options undici refuses fail with `InvalidConfig`.
 */
export const acquire = (
  options: UndiciOptions | undefined,
  env?: Environment
): Effect.Effect<Network, InvalidConfig, Scope.Scope> =>
  Effect.acquireRelease(
    options !== undefined && (typeof options !== "object" || options === null)
      ? Effect.fail(invalidArgument("agentOptions", "must be an object of undici Agent options"))
      : Effect.flatMap(Effect.promise(() => import("undici")), (undici) =>
        Effect.flatten(Effect.try({
          try: () => make(undici, options, env ?? process.env),
          catch: (cause) =>
            invalidArgument(
              refusedOption(cause instanceof Error ? cause.message : "", splitOptions(options ?? {}).agent),
              `was refused by undici: ${describe(cause)}`
            )
        }))),
    (built) => Effect.promise(() => built.close())
  )
