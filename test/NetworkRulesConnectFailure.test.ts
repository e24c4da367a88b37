/**
 * What a failure to connect tells the user to check (core/transport/connectFailure.ts), read from
 * each place undici puts it, and whether it surely came before the request reached a server
 * (requestSent: false, src/internal/transport/wire.ts).
 */
import { describe, expect, it } from "vitest"
import { classify, type Route } from "../core/transport/connectFailure.js"
import { neverConnected } from "../src/internal/transport/wire.js"

describe("what a failure to connect tells the user to check", () => {
  const direct: Route = { host: "api.example", port: 8443, https: true, proxy: undefined, clientCertificate: false }
  const proxied: Route = { ...direct, proxy: "http://proxy.example:3128" }
  const error = (code: string, message = "", extra: object = {}) =>
    Object.assign(new Error(message), { code, ...extra })

  it.each(
    [
      [
        "a name that does not resolve",
        error("ENOTFOUND", "getaddrinfo ENOTFOUND api.example", { hostname: "api.example" }),
        direct,
        "Dns",
        /^the host name api\.example could not be resolved \(ENOTFOUND\)/
      ],
      [
        "the proxy's name",
        error("ENOTFOUND", "", { hostname: "proxy.example" }),
        proxied,
        "Dns",
        /^the proxy's host name \(http:\/\/proxy\.example:3128\) could not be resolved/
      ],
      [
        "a CA not trusted",
        error("SELF_SIGNED_CERT_IN_CHAIN"),
        direct,
        "Tls",
        /not signed by a CA this client trusts \(SELF_SIGNED_CERT_IN_CHAIN\): give your network's CA as ca \(CLINICAL_CA_FILE\)/
      ],
      [
        "a leaf not verified",
        error("UNABLE_TO_VERIFY_LEAF_SIGNATURE"),
        direct,
        "Tls",
        /not signed by a CA this client trusts/
      ],
      [
        "another host's certificate",
        error("ERR_TLS_CERT_ALTNAME_INVALID"),
        direct,
        "Tls",
        /^the server's certificate is not for api\.example/
      ],
      ["an expired certificate", error("CERT_HAS_EXPIRED"), direct, "Tls", /has expired/],
      [
        "a certificate not valid yet",
        error("CERT_NOT_YET_VALID"),
        direct,
        "Tls",
        /^the server's certificate is not valid yet \(CERT_NOT_YET_VALID\): check this machine's clock$/
      ],
      [
        "a client certificate wanted",
        error("ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED"),
        direct,
        "Tls",
        /requires a client certificate .*set clientCertificate/
      ],
      [
        "a client certificate refused",
        error("ERR_SSL_TLSV1_ALERT_UNKNOWN_CA"),
        { ...direct, clientCertificate: true },
        "Tls",
        /refused this client's certificate/
      ],
      [
        "the proxy refusing the credentials",
        error("UND_ERR_ABORTED", "Proxy response (407) !== 200 when HTTP Tunneling"),
        proxied,
        "Proxy",
        /^the proxy http:\/\/proxy\.example:3128 refused the credentials \(HTTP 407\)/
      ],
      [
        "tinyproxy refusing them with 401",
        error("UND_ERR_ABORTED", "Proxy response (401) !== 200 when HTTP Tunneling"),
        proxied,
        "Proxy",
        /refused the credentials \(HTTP 401\)/
      ],
      [
        "the proxy refusing the target",
        error("UND_ERR_ABORTED", "Proxy response (403) !== 200 when HTTP Tunneling"),
        proxied,
        "Proxy",
        /^the proxy http:\/\/proxy\.example:3128 refused to connect to api\.example:8443 \(HTTP 403\): ask for api\.example:8443 to be allowed$/
      ],
      [
        "the proxy failing to reach it",
        error("UND_ERR_ABORTED", "Proxy response (502) !== 200 when HTTP Tunneling"),
        proxied,
        "Proxy",
        /could not open a tunnel to api\.example:8443 \(HTTP 502\)/
      ],
      [
        "the proxy refusing the connection",
        error("ECONNREFUSED", "", { port: 3128 }),
        proxied,
        "Network",
        /^the proxy http:\/\/proxy\.example:3128 refused the connection/
      ],
      [
        "the https proxy's certificate for another host (undici wraps it)",
        Object.assign(new Error("x"), { code: "UND_ERR_PRX_TLS", cause: error("ERR_TLS_CERT_ALTNAME_INVALID") }),
        proxied,
        "Tls",
        /^the proxy's certificate is not for its host name .*\(http:\/\/proxy\.example:3128\)/
      ],
      [
        "the proxy's certificate, named by its host",
        error("ERR_TLS_CERT_ALTNAME_INVALID", "", { host: "proxy.example" }),
        proxied,
        "Tls",
        /^the proxy's certificate is not for its host name/
      ],
      [
        "a proxy that never answers the tunnel request",
        error("UND_ERR_HEADERS_TIMEOUT", "Headers Timeout Error"),
        proxied,
        "Network",
        /^the proxy http:\/\/proxy\.example:3128 did not answer the tunnel request within the connect timeout$/
      ]
    ] as const
  )("%s: %s", (_, cause, route, reason, detail) => {
    const classified = classify(cause, route)
    expect(classified).toMatchObject({ reason, requestSent: false })
    expect(classified!.detail).toMatch(detail)
  })

  // Every code of each kind: a code left out of its set would be described as the network's.
  it.each(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "EAI_NODATA"])(
    "%s is a name that does not resolve",
    (code) => {
      expect(classify(error(code), direct)).toEqual({
        reason: "Dns",
        detail: `the host name api.example could not be resolved (${code}): check the name and this machine's DNS`,
        requestSent: false
      })
    }
  )

  it.each([
    "SELF_SIGNED_CERT_IN_CHAIN",
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "UNABLE_TO_GET_ISSUER_CERT",
    "CERT_UNTRUSTED",
    "CERT_SIGNATURE_FAILURE"
  ])("%s is a certificate not signed by a CA this client trusts", (code) => {
    expect(classify(error(code), direct)).toEqual({
      reason: "Tls",
      detail:
        `the server's certificate is not signed by a CA this client trusts (${code}): give your network's CA as ca (CLINICAL_CA_FILE) or in NODE_EXTRA_CA_CERTS`,
      requestSent: false
    })
  })

  it.each([
    "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED",
    "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
    "ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN",
    "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
    "ERR_SSL_TLSV1_ALERT_ACCESS_DENIED",
    "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED",
    "ERR_SSL_SSLV3_ALERT_CERTIFICATE_REVOKED"
  ])("%s is the server refusing this client's certificate, or wanting one", (code) => {
    expect(classify(error(code), { ...direct, clientCertificate: true })).toEqual({
      reason: "Tls",
      detail:
        `the server refused this client's certificate (${code}): check that clientCertificate is the one issued for this service, and not expired`,
      requestSent: false
    })
    expect(classify(error(code), direct)).toEqual({
      reason: "Tls",
      detail:
        `the server requires a client certificate (${code}): set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)`,
      requestSent: false
    })
  })

  it("a connection closed after the handshake, over https, hints at the client certificate: one to set, or the one set", () => {
    const closed = error("UND_ERR_SOCKET", "other side closed")
    expect(classify(closed, direct)).toEqual({
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server requires a client certificate, set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)",
      requestSent: undefined
    })
    expect(classify(closed, { ...direct, clientCertificate: true })).toEqual({
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server checks client certificates, it may have refused this one: check clientCertificate",
      requestSent: undefined
    })
    expect(classify(closed, { ...direct, https: false })).toBeUndefined()
  })

  it("anything else is the network's, described by the caller", () => {
    expect(classify(error("ECONNRESET"), direct)).toBeUndefined()
    expect(classify(error("ECONNREFUSED", "", { port: 443 }), proxied)).toBeUndefined()
    expect(classify("a string", direct)).toBeUndefined()
    // A proxy's answer without a proxy in the route is not read as one.
    expect(classify(error("UND_ERR_ABORTED", "Proxy response (407) !== 200"), direct)).toBeUndefined()
  })
})

// From the transport's mutation run (npm run mutate:transport): what no test said yet.
describe("what a failure to connect says, read from each place undici puts it", () => {
  const direct: Route = { host: "api.example", port: 8443, https: true, proxy: undefined, clientCertificate: false }
  const proxied: Route = { ...direct, proxy: "http://proxy.example:3128" }
  const error = (code: unknown, message = "", extra: object = {}) =>
    Object.assign(new Error(message), { code, ...extra })
  const nested = (inner: unknown, depth: number): unknown =>
    depth === 0 ? inner : Object.assign(new Error("wrapped"), { cause: nested(inner, depth - 1) })
  const unresolved = /^the host name api\.example could not be resolved \(ENOTFOUND\)/

  it("the code is read eight errors deep at most; a cause that is no object ends the search", () => {
    expect(classify(nested(error("ENOTFOUND"), 7), direct)?.detail).toMatch(unresolved)
    expect(classify(nested(error("ENOTFOUND"), 8), direct)).toBeUndefined()
    expect(classify(Object.assign(new Error("x"), { cause: null }), direct)).toBeUndefined()
    expect(classify(Object.assign(new Error("x"), { cause: "ENOTFOUND" }), direct)).toBeUndefined()
    expect(classify(null, direct)).toBeUndefined()
  })

  it("a code that is not text is passed over for one down the chain", () => {
    expect(classify(error(5, "", { cause: error("ENOTFOUND") }), direct)?.detail).toMatch(unresolved)
  })

  it("an error with no code anywhere is still read for a proxy's answer", () => {
    expect(classify(new Error("Proxy response (403) !== 200 when HTTP Tunneling"), proxied)).toMatchObject({
      reason: "Proxy"
    })
    expect(classify(new Error("Proxy Authentication Required (407)"), proxied)?.detail).toMatch(/407/)
  })

  it("the proxy's connection is known by its host, or by its port, the scheme's when the URL has none", () => {
    const refusedAtProxy = (found: object, proxy: string) =>
      classify(error("ECONNREFUSED", "", found), { ...direct, proxy })?.detail
    expect(refusedAtProxy({ hostname: "10.0.0.9", port: 80 }, "http://proxy.example")).toBe(
      "the proxy http://proxy.example refused the connection (ECONNREFUSED)"
    )
    expect(refusedAtProxy({ hostname: "10.0.0.9", port: 443 }, "https://proxy.example")).toBe(
      "the proxy https://proxy.example refused the connection (ECONNREFUSED)"
    )
    expect(refusedAtProxy({ hostname: "10.0.0.9", port: 443 }, "http://proxy.example")).toBeUndefined()
    expect(refusedAtProxy({ host: "proxy.example" }, "http://proxy.example:3128")).toMatch(/^the proxy /)
    // A port given as text, or a host name that is not text, says nothing of where it was.
    expect(refusedAtProxy({ hostname: "10.0.0.9", port: "3128" }, "http://proxy.example:3128")).toBeUndefined()
    expect(refusedAtProxy({ hostname: 5, host: "proxy.example" }, "http://proxy.example:3128")).toMatch(/^the proxy /)
  })

  it("a code of its own kind only: a reset at the proxy, or elsewhere, is the caller's to describe", () => {
    expect(classify(error("ECONNRESET", "", { hostname: "proxy.example" }), proxied)).toBeUndefined()
    expect(classify(error("ECONNRESET", "other side closed"), direct)).toBeUndefined()
    expect(classify(error("UND_ERR_HEADERS_TIMEOUT"), direct)).toBeUndefined()
  })
})

describe("whether a failure surely came before the request reached a server (requestSent: false)", () => {
  const error = (code: string | undefined, cause?: unknown) => Object.assign(new Error("x"), { code, cause })
  /** `inner` wrapped in `depth` errors without a code, as fetch and undici wrap theirs. */
  const wrapped = (inner: unknown, depth: number): unknown =>
    depth === 0 ? inner : wrapped(error(undefined, inner), depth - 1)

  it.each([
    "ECONNREFUSED",
    "ENOTFOUND",
    "EAI_AGAIN",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "EADDRNOTAVAIL",
    "UND_ERR_CONNECT_TIMEOUT"
  ])("%s: no connection was made", (code) => {
    expect(neverConnected(error(code))).toBe(true)
  })

  it("a connection that was made, or anything else, may have reached it", () => {
    for (const code of ["ECONNRESET", "UND_ERR_SOCKET", "EPIPE", "ETIMEDOUT", undefined]) {
      expect(neverConnected(error(code))).toBe(false)
    }
    for (const cause of [undefined, null, "ECONNREFUSED", 5, { code: 5 }]) expect(neverConnected(cause)).toBe(false)
  })

  it("the code is looked for down the cause chain, eight errors deep at most", () => {
    expect(neverConnected(wrapped(error("ECONNREFUSED"), 7))).toBe(true)
    expect(neverConnected(wrapped(error("ECONNREFUSED"), 8))).toBe(false)
    // Any error of the chain that names such a code counts, whatever wraps it.
    expect(neverConnected(error("ECONNRESET", error("ECONNREFUSED")))).toBe(true)
  })

  it("several addresses tried (an AggregateError): only when every one of them was never connected", () => {
    const refused = error("ECONNREFUSED")
    expect(neverConnected(new AggregateError([refused, error("EHOSTUNREACH")]))).toBe(true)
    expect(neverConnected(wrapped(new AggregateError([refused, refused]), 2))).toBe(true)
    expect(neverConnected(new AggregateError([refused, error("ECONNRESET")]))).toBe(false)
    expect(neverConnected(new AggregateError([]))).toBe(false)
  })
})
