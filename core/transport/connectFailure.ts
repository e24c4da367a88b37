/**
 * What a failure to reach a server means, in words that say what to check: a name that does not
 * resolve (`Dns`), a certificate refused either way (`Tls`), a proxy that refused the tunnel
 * (`Proxy`), or the network itself (`Network`). Pure: the cause undici gave (its `code`, down the
 * `cause` chain) and where the request was going in, the reason and the detail out. The detail
 * names hosts and codes, never a credential; the caller scrubs it of the request's secrets too.
 */
import type { TransportError } from "../errors.js"

/** Where a request was going: its host and port, the proxy it went through (origin only), whether a client certificate was offered. */
export interface Route {
  readonly host: string
  /** The target's port, its scheme's default when the URL names none: a proxy may allow some ports alone. */
  readonly port: number
  readonly https: boolean
  readonly proxy: string | undefined
  readonly clientCertificate: boolean
}

/** A failure classified: the reason, what to check, and whether the request surely never reached the server. */
export interface Classified {
  readonly reason: TransportError["reason"]
  readonly detail: string
  readonly requestSent: false | undefined
}

interface Found {
  readonly code: string | undefined
  readonly message: string
  /** The host the failing connection was to, when the error says (`hostname` from a lookup, `host` from TLS). */
  readonly hostname: string | undefined
  readonly port: number | undefined
  /** undici wrapped it as a failure of the TLS to an https proxy. */
  readonly proxyTls: boolean
}

/** The first error down the cause chain that carries a code (else the outermost), and its message. */
const findCause = (cause: unknown): Found => {
  let current = cause
  let proxyTls = false
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const { code, host, hostname, message, port } = current as Record<string, unknown>
    if (code === "UND_ERR_PRX_TLS") proxyTls = true
    else if (typeof code === "string") {
      return {
        code,
        message: typeof message === "string" ? message : "",
        hostname: typeof hostname === "string" ? hostname : typeof host === "string" ? host : undefined,
        port: typeof port === "number" ? port : undefined,
        proxyTls
      }
    }
    current = (current as { readonly cause?: unknown }).cause
  }
  const message = cause instanceof Error ? cause.message : String(cause)
  return { code: undefined, message, hostname: undefined, port: undefined, proxyTls }
}

const DNS = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA"])

const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE"
])

/** Alerts a server sends when it will not take this client's certificate (or wants one). */
const CLIENT_CERTIFICATE_REFUSED = new Set([
  "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
  "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN",
  "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_TLSV1_ALERT_ACCESS_DENIED",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED"
])

const unsent = (reason: Classified["reason"], detail: string): Classified => ({ reason, detail, requestSent: false })

/**
 * What the proxy's answer to the tunnel request means. A refusal names the port too: proxies
 * commonly allow tunnels to port 443 alone (tinyproxy's `ConnectPort`, squid's `SSL_ports`), and it
 * is the host and port that the proxy's administrators are asked to allow.
 */
const proxyRefusal = (status: number, route: Route): Classified => {
  const target = `${route.host}:${route.port}`
  return unsent(
    "Proxy",
    status === 407 || status === 401
      ? `the proxy ${route.proxy} refused the credentials (HTTP ${status}): check the proxy's user and password`
      : status === 403
      ? `the proxy ${route.proxy} refused to connect to ${target} (HTTP 403): ask for ${target} to be allowed`
      : `the proxy ${route.proxy} could not open a tunnel to ${target} (HTTP ${status})`
  )
}

/** Whether the failing connection was the one to the proxy: its host or port is the proxy's. */
const atProxy = (found: Found, route: Route): boolean => {
  if (route.proxy === undefined) return false
  if (found.proxyTls) return true
  const proxy = new URL(route.proxy)
  const port = proxy.port === "" ? (proxy.protocol === "https:" ? "443" : "80") : proxy.port
  return found.hostname === proxy.hostname || (found.port !== undefined && String(found.port) === port)
}

/**
 * The reason and detail of a failure to reach a server (no response started), from what undici
 * threw and where the request was going. `undefined` when it says nothing more than the network
 * failing: the caller keeps its own description.
 */
export const classify = (cause: unknown, route: Route): Classified | undefined => {
  const found = findCause(cause)
  const code = found.code ?? ""
  const tunnel = /Proxy response \((\d{3})\)/.exec(found.message) ?? /Proxy Authentication Required \((\d{3})\)/.exec(
    found.message
  )
  if (tunnel !== null && route.proxy !== undefined) return proxyRefusal(Number(tunnel[1]), route)
  if (DNS.has(code)) {
    const name = atProxy(found, route) ? `the proxy's host name (${route.proxy})` : `the host name ${route.host}`
    return unsent("Dns", `${name} could not be resolved (${code}): check the name and this machine's DNS`)
  }
  if (UNTRUSTED.has(code)) {
    return unsent(
      "Tls",
      `the server's certificate is not signed by a CA this client trusts (${code}): give your network's CA as ca (CLINICAL_CA_FILE) or in NODE_EXTRA_CA_CERTS`
    )
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return unsent(
      "Tls",
      atProxy(found, route)
        ? `the proxy's certificate is not for its host name (ERR_TLS_CERT_ALTNAME_INVALID): check the proxy's URL (${route.proxy})`
        : `the server's certificate is not for ${route.host} (ERR_TLS_CERT_ALTNAME_INVALID): check the host name in the URL`
    )
  }
  if (code === "CERT_HAS_EXPIRED") {
    return unsent(
      "Tls",
      "the server's certificate has expired (CERT_HAS_EXPIRED): it must be renewed, or this machine's clock is wrong"
    )
  }
  if (code === "CERT_NOT_YET_VALID") {
    return unsent("Tls", "the server's certificate is not valid yet (CERT_NOT_YET_VALID): check this machine's clock")
  }
  if (CLIENT_CERTIFICATE_REFUSED.has(code)) {
    return unsent(
      "Tls",
      route.clientCertificate
        ? `the server refused this client's certificate (${code}): check that clientCertificate is the one issued for this service, and not expired`
        : `the server requires a client certificate (${code}): set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)`
    )
  }
  if (code === "ECONNREFUSED" && atProxy(found, route)) {
    return unsent("Network", `the proxy ${route.proxy} refused the connection (ECONNREFUSED)`)
  }
  // The tunnel request is the only one given the connect timeout as its wait for headers.
  if (code === "UND_ERR_HEADERS_TIMEOUT" && route.proxy !== undefined) {
    return unsent("Network", `the proxy ${route.proxy} did not answer the tunnel request within the connect timeout`)
  }
  // TLS 1.3: a server that refuses the client's certificate (or wants one) does so after the
  // client's side of the handshake, and undici sees only the connection closing: a hint, since a
  // server may close a connection for other reasons too.
  if (code === "UND_ERR_SOCKET" && route.https && /other side closed/.test(found.message)) {
    return {
      reason: "Network",
      detail: `${code}: ${found.message}; ${
        route.clientCertificate
          ? "if the server checks client certificates, it may have refused this one: check clientCertificate"
          : "if the server requires a client certificate, set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)"
      }`,
      requestSent: undefined
    }
  }
  return undefined
}
