/**
 * Which proxy a request goes through, as pure functions: a proxy URL read once (its credentials
 * split out as a secret), the environment's variables read as curl reads them, and `NO_PROXY`'s
 * rules matched against a target. The undici adapter builds its dispatchers from the outcome.
 *
 * | setting | what it means |
 * |---|---|
 * | `proxy` unset | the environment: `https_proxy`/`HTTPS_PROXY` for https targets, `http_proxy`/`HTTP_PROXY` for http, `all_proxy`/`ALL_PROXY` for either when those are unset (lower case first) |
 * | `proxy: "http://user:pass@host:3128"` | that proxy for every target |
 * | `proxy: false` or `"none"` | no proxy, whatever the environment says |
 * | `noProxy` unset | `no_proxy`/`NO_PROXY` |
 *
 * `NO_PROXY` holds host names (`example.com` and `.example.com` match it and its subdomains), IP
 * addresses and networks (`10.0.0.0/8`, `::1`), each with an optional `:port`, or `*` for every
 * target, separated by commas or spaces.
 *
 * `S` is how the caller holds a secret (each Effect line its `Redacted`): the credentials are handed
 * to its `seal` as soon as they are read.
 */
import * as Net from "node:net"
import * as Url from "node:url"
import { type Checked, refuse } from "../validate.js"

/** A proxy to go through: where it is, and the credentials it wants (a secret). */
export interface ProxyEndpoint<S> {
  /** `http://host:port` or `https://host:port`: never credentials. */
  readonly origin: string
  /** The `Proxy-Authorization` value (`Basic ...`) from the URL's credentials, if it had any. */
  readonly authorization: S | undefined
}

/** How a client chooses its proxy. */
export type ProxySetting<S> =
  | { readonly _tag: "FromEnvironment" }
  | { readonly _tag: "Direct" }
  | { readonly _tag: "Through"; readonly proxy: ProxyEndpoint<S> }

export const FROM_ENVIRONMENT: ProxySetting<never> = { _tag: "FromEnvironment" }
export const DIRECT: ProxySetting<never> = { _tag: "Direct" }

/** Longest proxy URL read: a URL is a line, not a file. */
const MAX_PROXY_URL_LENGTH = 2048

/** The characters that end a URL's credentials early when left as they are, percent-encoded. */
const PERCENT_ENCODED: Readonly<Record<string, string>> = {
  "@": "%40",
  "#": "%23",
  "/": "%2F",
  "?": "%3F",
  // An http URL's parser takes it for a slash.
  "\\": "%5C"
}

/**
 * The first character of the credentials (what comes before the URL's last `@`) that would end
 * them early, if any: a URL parser reads `http://user:pa#ss@proxy:3128` as the host `user` with a
 * fragment, and curl takes the first `@` of `user:p@ss@proxy` where WHATWG's parser takes the last,
 * so the same variable means two proxies to two programs. Refused rather than guessed at.
 */
const unencodedInCredentials = (text: string): string | undefined => {
  const start = text.indexOf("://")
  const end = text.lastIndexOf("@")
  if (start < 0 || end <= start) return undefined
  return /[@#/?\\]/.exec(text.slice(start + 3, end))?.[0]
}

/**
 * A proxy URL read: `http://` or `https://`, a host, a port (default 80 or 443), no path, query or
 * fragment; credentials percent-encoded as in any URL. The reason never shows the URL (it may hold
 * a password). `value` is the setting revealed (a string or a `URL`).
 */
export const proxyEndpoint = <S>(value: unknown, seal: (secret: string) => S): Checked<ProxyEndpoint<S>> => {
  const text = value instanceof URL ? value.href : value
  if (typeof text !== "string" || text.trim() === "" || text.length > MAX_PROXY_URL_LENGTH) {
    return refuse("must be a proxy URL such as http://proxy.example:3128")
  }
  const unencoded = unencodedInCredentials(text.trim())
  if (unencoded !== undefined) {
    return refuse(
      `has a '${unencoded}' in its user or password: percent-encode it (${PERCENT_ENCODED[unencoded]})`
    )
  }
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    return refuse("is not a URL (expected http://host:port, credentials percent-encoded)")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return refuse("must start with http:// or https://")
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "") {
    return refuse("must be a proxy's address alone: no path, query or fragment")
  }
  let username: string
  let password: string
  try {
    username = decodeURIComponent(url.username)
    password = decodeURIComponent(url.password)
  } catch {
    return refuse("has credentials that are not percent-encoded correctly")
  }
  const port = url.port === "" ? (url.protocol === "https:" ? "443" : "80") : url.port
  return {
    ok: true,
    value: {
      origin: `${url.protocol}//${url.hostname}:${port}`,
      authorization: username === "" && password === ""
        ? undefined
        : seal(`Basic ${Buffer.from(`${username}:${password}`, "utf8").toString("base64")}`)
    }
  }
}

const SETTING_TAGS: ReadonlySet<unknown> = new Set(["FromEnvironment", "Direct", "Through"])

/**
 * The `proxy` setting read: a proxy URL, or `false` / `"none"` for none (or a setting already read).
 * `reveal` reads a secret the caller holds (a URL with credentials) as text.
 */
export const proxySetting = <S>(
  value: unknown,
  { reveal, seal }: { readonly reveal: (value: unknown) => unknown; readonly seal: (secret: string) => S }
): Checked<ProxySetting<S>> => {
  if (value === false || (typeof value === "string" && value.trim().toLowerCase() === "none")) {
    return { ok: true, value: DIRECT }
  }
  if (typeof value === "object" && value !== null && SETTING_TAGS.has((value as { _tag?: unknown })._tag)) {
    return { ok: true, value: value as ProxySetting<S> }
  }
  // A secret given is a proxy's URL, revealed only to be read as one: never "none".
  const proxy = proxyEndpoint(reveal(value), seal)
  return proxy.ok ? { ok: true, value: { _tag: "Through", proxy: proxy.value } } : proxy
}

/** One rule of `NO_PROXY`. */
type Rule =
  | { readonly _tag: "All" }
  | { readonly _tag: "Domain"; readonly domain: string; readonly port: number | undefined }
  | {
    readonly _tag: "Network"
    readonly block: Net.BlockList
    readonly family: "ipv4" | "ipv6"
    readonly port: number | undefined
  }

/** What `NO_PROXY` says, read once. */
export interface Bypass {
  readonly rules: ReadonlyArray<Rule>
}

export const NO_BYPASS: Bypass = { rules: [] }

const PORT = /^(.*):(\d{1,5})$/

/** The family of an IP address, or `undefined` for a name. */
const familyOf = (host: string): "ipv4" | "ipv6" | undefined =>
  Net.isIPv4(host) ? "ipv4" : Net.isIPv6(host) ? "ipv6" : undefined

const network = (
  address: string,
  prefix: number | undefined,
  port: number | undefined
): Rule | undefined => {
  const family = familyOf(address)
  if (family === undefined) return undefined
  const bits = prefix ?? (family === "ipv4" ? 32 : 128)
  if (!(bits >= 0 && bits <= (family === "ipv4" ? 32 : 128))) return undefined
  const block = new Net.BlockList()
  block.addSubnet(address, bits, family)
  return { _tag: "Network", block, family, port }
}

const ruleOf = (entry: string): Rule | undefined => {
  let host = entry
  let port: number | undefined
  // `[::1]:8080`, `host:8080`; a bare IPv6 address has colons of its own and no port.
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(host)
  if (bracketed !== null) {
    host = bracketed[1]!
    port = bracketed[2] === undefined ? undefined : Number(bracketed[2])
  } else if (!Net.isIPv6(host.split("/")[0]!)) {
    const withPort = PORT.exec(host)
    if (withPort !== null) {
      host = withPort[1]!
      port = Number(withPort[2])
    }
  }
  const [address, prefix, extra] = host.split("/")
  if (extra === undefined && address !== undefined && Net.isIP(address) !== 0) {
    // A prefix is digits: `10.0.0.0/` is no network (Number("") would make it /0, every address).
    if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return undefined
    return network(address, prefix === undefined ? undefined : Number(prefix), port)
  }
  // `*.example.com`, `.example.com` and `example.com.` all name example.com and its subdomains; a
  // name in Unicode is matched as a URL holds it (punycode); `*` in a list names no host (curl).
  const name = host.replace(/^\*?\./, "").replace(/\.$/, "")
  const domain = /^[\x00-\x7f]*$/.test(name) ? name.toLowerCase() : Url.domainToASCII(name)
  return domain === "" || prefix !== undefined ? undefined : { _tag: "Domain", domain, port }
}

/** `NO_PROXY`'s rules; entries that mean nothing are skipped, as curl skips them. */
export const bypassOf = (text: string | undefined): Bypass => {
  if (text === undefined) return NO_BYPASS
  // Every host only as the whole value, as curl reads it.
  if (text.trim() === "*") return { rules: [{ _tag: "All" }] }
  const rules: Array<Rule> = []
  for (const entry of text.split(/[\s,]+/)) {
    if (entry === "") continue
    const rule = ruleOf(entry)
    if (rule !== undefined) rules.push(rule)
  }
  return { rules }
}

const DEFAULT_PORT: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 }

/**
 * Whether `NO_PROXY`'s rules send a target straight to it, as curl decides (its `lib/noproxy.c`):
 * a host name by a name entry, itself or a domain it is under (at a dot boundary); an IP address
 * only by an address or network of its own family (`1` is no suffix of `127.0.0.1`, and `::/0`
 * holds no IPv4 address).
 */
export const bypasses = (bypass: Bypass, target: URL): boolean => {
  if (bypass.rules.length === 0) return false
  const host = target.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase()
  const port = target.port === "" ? DEFAULT_PORT[target.protocol] : Number(target.port)
  const family = familyOf(host)
  return bypass.rules.some((rule) => {
    if (rule._tag === "All") return true
    if (rule.port !== undefined && rule.port !== port) return false
    return rule._tag === "Domain"
      ? family === undefined && (host === rule.domain || host.endsWith(`.${rule.domain}`))
      : family === rule.family && rule.block.check(host, family)
  })
}

/** The environment's proxies, read as curl reads them (lower case first); refused values by variable. */
export interface EnvironmentProxies<S> {
  readonly http: ProxyEndpoint<S> | undefined
  readonly https: ProxyEndpoint<S> | undefined
  readonly bypass: Bypass
}

type Environment = Readonly<Record<string, string | undefined>>

/** The first of `names` set (not blank) in `env`, with its name. */
const firstSet = (env: Environment, names: ReadonlyArray<string>): readonly [string, string] | undefined => {
  for (const name of names) {
    const value = env[name]
    if (value !== undefined && value.trim() !== "") return [name, value]
  }
  return undefined
}

/** A checked value, or the variable that was refused and why. */
export type ByVariable<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly variable: string; readonly reason: string }

/**
 * The proxies an environment names: a variable whose value is not a proxy URL is refused by name,
 * never ignored: a request would otherwise leave without the proxy the network requires, or the
 * operator would wonder why it is not used.
 */
export const environmentProxies = <S>(
  env: Environment,
  seal: (secret: string) => S
): ByVariable<EnvironmentProxies<S>> => {
  const read = (names: ReadonlyArray<string>): ByVariable<ProxyEndpoint<S> | undefined> => {
    const found = firstSet(env, names)
    if (found === undefined) return { ok: true, value: undefined }
    const proxy = proxyEndpoint(found[1], seal)
    return proxy.ok ? proxy : { ok: false, variable: found[0], reason: proxy.reason }
  }
  const all = read(["all_proxy", "ALL_PROXY"])
  if (!all.ok) return all
  const http = read(["http_proxy", "HTTP_PROXY"])
  if (!http.ok) return http
  const https = read(["https_proxy", "HTTPS_PROXY"])
  if (!https.ok) return https
  return {
    ok: true,
    value: {
      http: http.value ?? all.value,
      https: https.value ?? all.value,
      bypass: bypassOf(firstSet(env, ["no_proxy", "NO_PROXY"])?.[1])
    }
  }
}

/** Where requests go: through which proxy for each scheme, and what bypasses it. */
export interface Routes<S> {
  readonly http: ProxyEndpoint<S> | undefined
  readonly https: ProxyEndpoint<S> | undefined
  readonly bypass: Bypass
}

/**
 * The routes a setting gives in an environment: `noProxy` (the setting) or else the environment's
 * `NO_PROXY` applies to a proxy set explicitly as to one from the environment.
 */
export const routesOf = <S>(
  setting: ProxySetting<S>,
  noProxy: string | undefined,
  env: Environment,
  seal: (secret: string) => S
): ByVariable<Routes<S>> => {
  const explicitBypass = noProxy === undefined ? undefined : bypassOf(noProxy)
  switch (setting._tag) {
    case "Direct":
      return { ok: true, value: { http: undefined, https: undefined, bypass: NO_BYPASS } }
    case "Through":
      return {
        ok: true,
        value: {
          http: setting.proxy,
          https: setting.proxy,
          bypass: explicitBypass ?? bypassOf(firstSet(env, ["no_proxy", "NO_PROXY"])?.[1])
        }
      }
    case "FromEnvironment": {
      const found = environmentProxies(env, seal)
      return found.ok ? { ok: true, value: { ...found.value, bypass: explicitBypass ?? found.value.bypass } } : found
    }
  }
}

/** The proxy a request to `target` goes through, or `undefined` for none. */
export const proxyFor = <S>(routes: Routes<S>, target: URL): ProxyEndpoint<S> | undefined => {
  const proxy = target.protocol === "https:" ? routes.https : target.protocol === "http:" ? routes.http : undefined
  return proxy === undefined || bypasses(routes.bypass, target) ? undefined : proxy
}
