/**
 * The default transport's way out of the machine, for either Effect line: its settings (a proxy, a
 * private CA, a client certificate, on top of undici's `Agent` options), checked and turned into
 * undici dispatchers, one per way out, and each request's route, which failures are explained by.
 * The files the settings name are read here, once, when the transport is built.
 *
 * `S` is how the line holds a secret (its `Redacted`): see `trust.ts`'s `Secrets`. undici's types
 * are imported as types alone: each line depends on undici and passes its module in (loaded only
 * when a transport is built).
 */
import type * as Tls from "node:tls"
import type * as Undici from "undici"
import { readSettingFile } from "../settingFile.js"
import type { Checked } from "../validate.js"
import type { Route } from "./connectFailure.js"
import * as Proxy from "./proxy.js"
import * as Trust from "./trust.js"

/** What the default transport takes besides undici's `Agent` options. */
export interface NetworkOptions<S> {
  /**
   * The proxy: a URL (`http://user:password@proxy.example:3128`, credentials percent-encoded),
   * `false` (or `"none"`) for none. Default: the environment's `HTTPS_PROXY`, `HTTP_PROXY`,
   * `ALL_PROXY` (upper or lower case), as curl reads them.
   */
  readonly proxy?: string | URL | S | false | undefined
  /** Targets that bypass the proxy, as `NO_PROXY` writes them. Default: the environment's `NO_PROXY`. */
  readonly noProxy?: string | undefined
  /** A CA to trust besides Node's roots: its PEM text, or a PEM file's path. */
  readonly ca?: string | S | undefined
  /** Trust `ca` alone, not Node's roots (nor `NODE_EXTRA_CA_CERTS`). Default false. */
  readonly caOnly?: boolean | undefined
  /**
   * A client certificate for servers that ask for one (mutual TLS): `{ cert, key, passphrase? }`
   * (PEM text or file paths), or `{ pfx, passphrase? }` (PKCS#12 bytes or a file path).
   */
  readonly clientCertificate?:
    | { readonly cert: string; readonly key: string | S; readonly passphrase?: string | S | undefined }
    | { readonly pfx: Uint8Array | string; readonly passphrase?: string | S | undefined }
    | undefined
}

/** What a line's `layerUndici` takes: undici's `Agent` options and the {@link NetworkOptions}. */
export type UndiciOptions<S> = Undici.Agent.Options & NetworkOptions<S>

const NETWORK_KEYS = ["proxy", "noProxy", "ca", "caOnly", "clientCertificate"] as const

/** The network settings of a client's configuration, already read (`D`: the line's duration). */
export interface Settings<S, D> {
  /** The proxy: the environment's (`FromEnvironment`), none (`Direct`), or one (`Through`). */
  readonly proxy: Proxy.ProxySetting<S>
  readonly noProxy: string | undefined
  /** PEM text or a file's path. */
  readonly ca: string | undefined
  readonly caOnly: boolean
  readonly clientCertificate: Trust.ClientCertificate<S> | undefined
  readonly connections: number | undefined
  readonly keepAliveTimeout: D | undefined
  readonly connectTimeout: D | undefined
}

/** The default transport's options that a client's settings give (what is not set is left to undici). */
export const optionsOf = <S, D>(settings: Settings<S, D>, toMillis: (duration: D) => number): UndiciOptions<S> => {
  const options: Record<string, unknown> = { proxy: settings.proxy, caOnly: settings.caOnly }
  if (settings.noProxy !== undefined) options.noProxy = settings.noProxy
  if (settings.ca !== undefined) options.ca = settings.ca
  if (settings.clientCertificate !== undefined) options.clientCertificate = settings.clientCertificate
  if (settings.connections !== undefined) options.connections = settings.connections
  if (settings.keepAliveTimeout !== undefined) {
    // Also the most a server's `Keep-Alive: timeout=` hint may make it: the setting is the longest wait.
    options.keepAliveTimeout = options.keepAliveMaxTimeout = toMillis(settings.keepAliveTimeout)
  }
  if (settings.connectTimeout !== undefined) options.connectTimeout = toMillis(settings.connectTimeout)
  // `proxy` holds a setting already read, which the options take as they take a URL.
  return options as UndiciOptions<S>
}

export type Environment = Readonly<Record<string, string | undefined>>

/** The dispatchers of a transport, and how a request is routed through them. */
export interface Network {
  /** The dispatcher a request to `origin` goes through, and its route (for what a failure means). */
  readonly routeOf: (origin: string) => { readonly dispatcher: Undici.Dispatcher; readonly route: Route }
  /** Closes every dispatcher. */
  readonly close: () => Promise<void>
}

/** A refused setting, by its name; the line makes it its `InvalidConfig`. */
export interface Refused {
  readonly ok: false
  readonly setting: string
  readonly reason: string
}

/** A value, or the setting refused. */
export type Built<A> = { readonly ok: true; readonly value: A } | Refused

const refused = (setting: string, reason: string): Refused => ({ ok: false, setting, reason })
const built = <A>(value: A): Built<A> => ({ ok: true, value })
/** A check of the setting `setting`: its refusal named. */
const named = <A>(setting: string, checked: Checked<A>): Built<A> =>
  checked.ok ? checked : refused(setting, checked.reason)

/** A setting's text: itself when it is PEM, else the file it names. */
const pemOrFile = (setting: string, value: string): Built<string> => {
  if (Trust.isPem(value)) return built(value)
  const bytes = readSettingFile(setting, value)
  return bytes.ok ? built(bytes.value.toString("utf8")) : bytes
}

/** A PKCS#12 bundle: its bytes, or the file it names. */
const bytesOrFile = (setting: string, value: Uint8Array | string): Built<Buffer> =>
  value instanceof Uint8Array ? built(Buffer.from(value)) : readSettingFile(setting, value)

/**
 * What the settings add to undici's connectors, as TLS contexts built once, when the transport is
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

/** The CAs trusted: the `ca` setting's (with the roots and `NODE_EXTRA_CA_CERTS`, unless `caOnly`). */
const trustedOf = <S>(
  options: NetworkOptions<S>,
  env: Environment,
  secrets: Trust.Secrets<S>
): Built<Array<string> | undefined> => {
  if (options.ca === undefined) {
    return options.caOnly === true ? refused("caOnly", "needs ca: the CA to trust alone") : built(undefined)
  }
  const setting = named("ca", Trust.caSetting(options.ca, secrets.reveal))
  if (!setting.ok) return setting
  const pem = pemOrFile("ca", setting.value)
  if (!pem.ok) return pem
  // Node ignores an unreadable NODE_EXTRA_CA_CERTS with a warning of its own: so does this.
  const extraPath = env.NODE_EXTRA_CA_CERTS
  const extra = extraPath === undefined || extraPath === "" ? undefined : pemOrFile("", extraPath)
  const cas = named("ca", Trust.trustedCas(pem.value, options.caOnly === true, extra?.ok ? extra.value : undefined))
  return cas.ok ? built([...cas.value]) : cas
}

/** The client certificate's TLS options, its files read. */
const clientOf = <S>(options: NetworkOptions<S>, secrets: Trust.Secrets<S>): Built<Trust.ClientTls> => {
  if (options.clientCertificate === undefined) return built({})
  const certificate = named("clientCertificate", Trust.clientCertificate(options.clientCertificate, secrets))
  if (!certificate.ok) return certificate
  const { passphrase } = certificate.value
  const opened = passphrase === undefined ? {} : { passphrase: secrets.reveal(passphrase) as string }
  if (certificate.value._tag === "Pkcs12") {
    const pfx = bytesOrFile("clientCertificate.pfx", certificate.value.pfx)
    return pfx.ok ? built({ pfx: pfx.value, ...opened }) : pfx
  }
  const cert = pemOrFile("clientCertificate.cert", certificate.value.cert)
  if (!cert.ok) return cert
  const key = pemOrFile("clientCertificate.key", secrets.reveal(certificate.value.key) as string)
  return key.ok ? built({ cert: cert.value, key: key.value, ...opened }) : key
}

/** The TLS contexts a client's settings give undici's connectors (none at all when nothing is set). */
const contextsOf = <S>(options: NetworkOptions<S>, env: Environment, secrets: Trust.Secrets<S>): Built<Contexts> => {
  const ca = trustedOf(options, env, secrets)
  if (!ca.ok) return ca
  const client = clientOf(options, secrets)
  if (!client.ok) return client
  const trusted = ca.value === undefined ? {} : { ca: ca.value }
  let target = {}
  if (ca.value !== undefined || options.clientCertificate !== undefined) {
    const context = named(
      options.clientCertificate === undefined ? "ca" : "clientCertificate",
      Trust.secureContextOf({ ...trusted, ...client.value })
    )
    if (!context.ok) return context
    target = { secureContext: context.value }
  }
  let proxy = {}
  if (ca.value !== undefined) {
    const context = named("ca", Trust.secureContextOf(trusted))
    if (!context.ok) return context
    proxy = { secureContext: context.value }
  }
  return built({ target, proxy, any: ca.value !== undefined || options.clientCertificate !== undefined })
}

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
const connectOf = <S>(
  given: Undici.Agent.Options["connect"],
  contexts: Contexts,
  routes: Proxy.Routes<S>
): Built<NonNullable<Undici.Agent.Options["connect"]>> => {
  if (typeof given === "function") {
    if (contexts.any) {
      return refused("agentOptions.connect", "is a function: ca and clientCertificate cannot be added to it")
    }
    return routes.http === undefined && routes.https === undefined
      ? built(given)
      : refused(
        "agentOptions.connect",
        "is a function: a proxy's tunnels cannot use it (give undici's connect options as an object, or set proxy to none)"
      )
  }
  if (given !== undefined && given !== null && typeof given !== "object") {
    return refused("agentOptions.connect", "must be undici's connect options (an object) or a connector function")
  }
  return built({ ...contexts.target, ...given })
}

/** Where a client is made to have its options checked; it never connects. */
const CHECKED_ORIGIN = "http://localhost"

/**
 * Throws what undici throws for options it refuses, when the transport is built rather than at the
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
export const splitOptions = <S>(
  options: UndiciOptions<S>
): { readonly agent: Undici.Agent.Options; readonly network: NetworkOptions<S> } => {
  const agent: Record<string, unknown> = { ...options }
  const network: Record<string, unknown> = {}
  for (const key of NETWORK_KEYS) {
    if (key in agent) network[key] = agent[key]
    delete agent[key]
  }
  return { agent: agent as Undici.Agent.Options, network: network as NetworkOptions<S> }
}

/** How a request to `origin` is routed: straight out, or through its proxy's tunnel (one per proxy). */
const router = <S>(
  undici: typeof Undici,
  direct: Undici.Dispatcher,
  routes: Proxy.Routes<S>,
  tunnelOptions: (proxy: Proxy.ProxyEndpoint<S>) => Undici.ProxyAgent.Options,
  clientCertificate: boolean
): Network => {
  const tunnels = new Map<string, Undici.Dispatcher>()
  const tunnelThrough = (proxy: Proxy.ProxyEndpoint<S>): Undici.Dispatcher => {
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
}

/**
 * The dispatchers for `options` in `env` (the process's environment, for the proxy variables and
 * `NODE_EXTRA_CA_CERTS`), or the setting refused. Throws what undici throws for options it refuses
 * (see {@link refusedOption}).
 */
export const make = <S>(
  undici: typeof Undici,
  options: UndiciOptions<S> | undefined,
  env: Environment,
  secrets: Trust.Secrets<S>
): Built<Network> => {
  const { agent: agentOptions, network } = splitOptions(options ?? {})
  const setting = network.proxy === undefined
    ? built(Proxy.FROM_ENVIRONMENT)
    : named("proxy", Proxy.proxySetting(network.proxy, secrets))
  if (!setting.ok) return setting
  const routes = Proxy.routesOf(setting.value, network.noProxy, env, secrets.seal)
  if (!routes.ok) return refused(routes.variable, routes.reason)
  const contexts = contextsOf(network, env, secrets)
  if (!contexts.ok) return contexts
  const connect = connectOf(agentOptions.connect, contexts.value, routes.value)
  if (!connect.ok) return connect
  refusedByUndici(undici, { ...agentOptions, connect: connect.value })
  const direct = new undici.Agent({ ...agentOptions, connect: connect.value })
  const connectTimeout = agentOptions.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MILLIS
  const tunnelOptions = (proxy: Proxy.ProxyEndpoint<S>): Undici.ProxyAgent.Options => {
    const { connect: _, ...rest } = agentOptions
    return {
      ...rest,
      uri: proxy.origin,
      ...(proxy.authorization === undefined ? {} : { token: secrets.reveal(proxy.authorization) as string }),
      // The service's TLS: the contexts and the application's connect options (a function is refused above).
      requestTls: { timeout: connectTimeout, ...(connect.value as Undici.buildConnector.BuildOptions) },
      proxyTls: { ...contexts.value.proxy, timeout: connectTimeout },
      // The tunnel request itself: a proxy that accepts the connection and never answers is
      // given the connect timeout, not undici's 300 s wait for headers.
      clientFactory: (origin, options) =>
        new undici.Pool(origin, { ...options, headersTimeout: connectTimeout, bodyTimeout: connectTimeout })
    }
  }
  // Options only a ProxyAgent checks (`auth` beside the URL's credentials, `headers`) are refused
  // now, not by the first request through the proxy, where they died as a defect.
  for (const proxy of [routes.value.http, routes.value.https]) {
    if (proxy !== undefined) new undici.ProxyAgent(tunnelOptions(proxy)).destroy().catch(() => {})
  }
  return built(router(undici, direct, routes.value, tunnelOptions, network.clientCertificate !== undefined))
}
