/**
 * The default transport's network decisions as pure functions (src/internal/transport/proxy.ts,
 * trust.ts, connectFailure.ts): which proxy a target goes through, what NO_PROXY bypasses, what a
 * CA setting trusts, and what a failure to connect tells the user to check. The same, for real,
 * through tinyproxy and TLS: test/Network.test.ts.
 */
import { Either, Redacted } from "effect"
import * as Tls from "node:tls"
import { describe, expect, it } from "vitest"
import { classify, type Route } from "../core/transport/connectFailure.js"
import * as Proxy from "../src/internal/transport/proxy.js"
import * as Trust from "../src/internal/transport/trust.js"
import { neverConnected } from "../src/internal/transport/wire.js"

const endpoint = (text: string) => Either.getOrThrow(Proxy.proxyEndpoint(text))

describe("a proxy URL", () => {
  it("is read into its origin and a Basic authorization, the credentials percent-decoded", () => {
    const proxy = endpoint("http://alice:p%40ss%3Aword@proxy.example:3128")
    expect(proxy.origin).toBe("http://proxy.example:3128")
    expect(Redacted.value(proxy.authorization!)).toBe(`Basic ${Buffer.from("alice:p@ss:word").toString("base64")}`)
    expect(endpoint("https://proxy.example")).toEqual({ origin: "https://proxy.example:443", authorization: undefined })
    expect(endpoint("http://proxy.example/").origin).toBe("http://proxy.example:80")
    expect(endpoint("http://[::1]:8080").origin).toBe("http://[::1]:8080")
  })

  it("a user alone, or a password alone, is sent as the Basic authorization too", () => {
    const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString("base64")}`
    expect(Redacted.value(endpoint("http://alice@proxy.example:3128").authorization!)).toBe(basic("alice:"))
    expect(Redacted.value(endpoint("http://:s3cret@proxy.example:3128").authorization!)).toBe(basic(":s3cret"))
    expect(Redacted.value(endpoint("http://alice:@proxy.example:3128").authorization!)).toBe(basic("alice:"))
    expect(endpoint("http://@proxy.example:3128").authorization).toBeUndefined()
  })

  it.each([
    ["http://user:pa#ss@proxy.example:3128", "#", "%23"],
    ["http://user:12#34@proxy.example:3128", "#", "%23"],
    ["http://user:p@ss@proxy.example:3128", "@", "%40"],
    ["http://alice@corp:pw@proxy.example:3128", "@", "%40"],
    ["http://user:pa/ss@proxy.example:3128", "/", "%2F"],
    ["http://user:pa?ss@proxy.example:3128", "?", "%3F"],
    // An http URL's parser takes a backslash for a slash.
    ["http://user:pa\\ss@proxy.example:3128", "\\", "%5C"]
  ])(
    "%j: a %s left as it is in the user or password is refused, saying to percent-encode it",
    (text, character, code) => {
      expect(Proxy.proxyEndpoint(text)).toEqual(
        Either.left(`has a '${character}' in its user or password: percent-encode it (${code})`)
      )
    }
  )

  it("credentials percent-encoded are taken as they decode", () => {
    const proxy = endpoint("http://us%40er:p%40ss%23%2F%3F@proxy.example:3128")
    expect(proxy.origin).toBe("http://proxy.example:3128")
    expect(Redacted.value(proxy.authorization!)).toBe(`Basic ${Buffer.from("us@er:p@ss#/?").toString("base64")}`)
  })

  it.each([
    ["", "must be a proxy URL such as http://proxy.example:3128"],
    ["proxy.example:3128", "must start with http:// or https://"],
    ["socks5://proxy.example:1080", "must start with http:// or https://"],
    ["http://proxy.example:3128/path", "must be a proxy's address alone: no path, query or fragment"],
    ["http://proxy.example:3128?x=1", "must be a proxy's address alone: no path, query or fragment"],
    ["http://us%ZZer:secret@proxy.example", "has credentials that are not percent-encoded correctly"],
    ["http://", "is not a URL (expected http://host:port, credentials percent-encoded)"]
  ])("%j is refused: %s", (text, reason) => {
    expect(Proxy.proxyEndpoint(text)).toEqual(Either.left(reason))
  })

  it("a refusal never shows the URL, its password least of all", () => {
    for (const text of ["ftp://user:s3cret-pw@proxy", "http://user:s3cret-pw@proxy/path", "http://u%ZZ:s3cret-pw@p"]) {
      const reason = Either.getLeft(Proxy.proxyEndpoint(text))
      expect(reason._tag).toBe("Some")
      expect(JSON.stringify(reason)).not.toMatch(/s3cret|user:|u%ZZ/)
    }
  })

  it("the setting: a URL, or false / none for no proxy", () => {
    expect(Proxy.proxySetting(false)).toEqual(Either.right(Proxy.DIRECT))
    expect(Proxy.proxySetting(" NONE ")).toEqual(Either.right(Proxy.DIRECT))
    expect(Proxy.proxySetting(new URL("http://p.example:8080"))).toMatchObject(
      Either.right({ _tag: "Through", proxy: { origin: "http://p.example:8080" } })
    )
    expect(Proxy.proxySetting(Redacted.make("http://p.example:8080"))._tag).toBe("Right")
    expect(Proxy.proxySetting(true)._tag).toBe("Left")
    // A secret is a proxy's URL: a Redacted "none" is no way to turn the environment's proxy off.
    expect(Proxy.proxySetting(Redacted.make("none"))._tag).toBe("Left")
    expect(Proxy.proxySetting(Redacted.make(false as unknown as string))._tag).toBe("Left")
    // A secret wiped (Effect holds no value for it any more) is refused, not a crash.
    const wiped = Redacted.make("http://alice:s3cret@p.example:8080")
    Redacted.unsafeWipe(wiped)
    expect(Proxy.proxySetting(wiped)._tag).toBe("Left")
  })
})

describe("NO_PROXY", () => {
  const bypassed = (noProxy: string, target: string) => Proxy.bypasses(Proxy.bypassOf(noProxy), new URL(target))

  it.each([
    ["example.com", "https://example.com/x", true],
    ["example.com", "https://api.example.com", true],
    [".example.com", "https://api.example.com", true],
    ["*.example.com", "https://api.example.com", true],
    ["example.com", "https://notexample.com", false],
    ["EXAMPLE.com", "https://Api.Example.COM", true],
    ["example.com:8443", "https://example.com:8443", true],
    ["example.com:8443", "https://example.com", false],
    ["example.com:443", "https://example.com", true],
    ["localhost,127.0.0.1", "http://127.0.0.1:9000", true],
    ["10.0.0.0/8", "https://10.20.30.40", true],
    ["10.0.0.0/8", "https://11.0.0.1", false],
    ["192.168.1.5", "https://192.168.1.5:444", true],
    ["::1", "http://[::1]:8080", true],
    ["[::1]:8080", "http://[::1]:8080", true],
    ["[::1]:8080", "http://[::1]:8081", false],
    ["fd00::/8", "https://[fd12::1]", true],
    ["*", "https://anything.example", true],
    [" * ", "https://anything.example", true],
    // curl: '*' is every host only as the whole value; in a list it is no host's name.
    ["localhost,*", "https://anything.example", false],
    ["* localhost", "https://anything.example", false],
    // A name entry in Unicode names the host as a URL has it (punycode).
    ["bücher.example", "https://bücher.example", true],
    ["BÜCHER.example", "https://www.xn--bcher-kva.example", true],
    ["a.example b.example", "https://b.example", true],
    ["", "https://example.com", false],
    ["10.0.0.0/99, ,/", "https://10.0.0.1", false],
    ["10.0.0.0/", "https://93.184.216.34", false],
    ["10.0.0.0/x", "https://10.0.0.1", false],
    ["example.com.", "https://example.com/", true],
    ["example.com", "https://example.com./", true],
    [".example.com.", "https://api.example.com", true]
  ])("%j for %s: %s", (noProxy, target, expected) => {
    expect(bypassed(noProxy, target)).toBe(expected)
  })

  // curl's rules (lib/noproxy.c): a name is matched by a name entry (the name itself, or a domain at
  // a dot boundary); an address only by an address or network of its own family.
  it.each([
    ["1", "http://127.0.0.1:9000"],
    [".0.0.1", "http://127.0.0.1:9000"],
    ["0.0.1", "http://127.0.0.1:9000"],
    ["*.1", "http://127.0.0.1:9000"],
    ["localhost", "http://127.0.0.1:9000"],
    ["::/0", "http://127.0.0.1:9000"],
    ["::ffff:0:0/96", "http://127.0.0.1:9000"],
    ["127.0.0.0/8", "http://[::ffff:127.0.0.1]:9000"],
    ["1", "http://[::1]:9000"],
    ["127.0.0.1", "http://127.0.0.1.example:9000"]
  ])("%j does not send %s around the proxy (curl does not)", (noProxy, target) => {
    expect(bypassed(noProxy, target)).toBe(false)
  })

  it.each([
    ["127.0.0.1", "http://127.0.0.1:9000"],
    ["127.0.0.0/8", "http://127.0.0.1:9000"],
    ["0.0.0.0/0", "http://127.0.0.1:9000"],
    ["::/0", "http://[::1]:9000"],
    ["1.example", "https://api.1.example"]
  ])("%j sends %s around the proxy", (noProxy, target) => {
    expect(bypassed(noProxy, target)).toBe(true)
  })
})

describe("the routes of a setting in an environment", () => {
  const routes = (setting: Proxy.ProxySetting, env: Record<string, string>, noProxy?: string) =>
    Either.getOrThrow(Proxy.routesOf(setting, noProxy, env))
  const via = (r: Proxy.Routes, target: string) => Proxy.proxyFor(r, new URL(target))?.origin

  it("from the environment: https_proxy for https targets, http_proxy for http, all_proxy for either, lower case first", () => {
    const env = {
      HTTPS_PROXY: "http://upper-https:1",
      https_proxy: "http://lower-https:2",
      HTTP_PROXY: "http://upper-http:3"
    }
    const found = routes(Proxy.FROM_ENVIRONMENT, env)
    expect(via(found, "https://api.example")).toBe("http://lower-https:2")
    expect(via(found, "http://api.example")).toBe("http://upper-http:3")
    const fallback = routes(Proxy.FROM_ENVIRONMENT, { ALL_PROXY: "http://all:4" })
    expect(via(fallback, "https://api.example")).toBe("http://all:4")
    expect(via(fallback, "http://api.example")).toBe("http://all:4")
    expect(via(routes(Proxy.FROM_ENVIRONMENT, {}), "https://api.example")).toBeUndefined()
    // Blank is unset.
    expect(via(routes(Proxy.FROM_ENVIRONMENT, { HTTPS_PROXY: " " }), "https://api.example")).toBeUndefined()
  })

  it("NO_PROXY applies to the environment's proxy and to one set explicitly; noProxy replaces it", () => {
    const env = { HTTPS_PROXY: "http://p:1", NO_PROXY: "internal.example" }
    expect(via(routes(Proxy.FROM_ENVIRONMENT, env), "https://internal.example")).toBeUndefined()
    const explicit = Either.getOrThrow(Proxy.proxySetting("http://q:2"))
    expect(via(routes(explicit, env), "https://internal.example")).toBeUndefined()
    expect(via(routes(explicit, env), "https://api.example")).toBe("http://q:2")
    expect(via(routes(explicit, env, "api.example"), "https://internal.example")).toBe("http://q:2")
    expect(via(routes(explicit, env, "api.example"), "https://api.example")).toBeUndefined()
    // http targets too, from either setting.
    expect(via(routes(Proxy.FROM_ENVIRONMENT, { ...env, HTTP_PROXY: "http://p:1" }), "http://internal.example")).toBe(
      undefined
    )
    expect(via(routes(explicit, env), "http://internal.example:8080")).toBeUndefined()
    expect(via(routes(explicit, env), "http://api.example:8080")).toBe("http://q:2")
  })

  it("no proxy at all: the environment is not read", () => {
    expect(via(routes(Proxy.DIRECT, { HTTPS_PROXY: "http://p:1" }), "https://api.example")).toBeUndefined()
    expect(Proxy.routesOf(Proxy.DIRECT, undefined, { HTTPS_PROXY: "not a url" })._tag).toBe("Right")
  })

  it("a variable that is not a proxy URL is refused by name, never ignored, and its value not shown", () => {
    expect(Proxy.routesOf(Proxy.FROM_ENVIRONMENT, undefined, { https_proxy: "proxy:3128" })).toEqual(
      Either.left(["https_proxy", "must start with http:// or https://"])
    )
    const refused = Proxy.routesOf(Proxy.FROM_ENVIRONMENT, undefined, { HTTP_PROXY: "ftp://u:hunter2@x" })
    expect(JSON.stringify(refused)).not.toContain("hunter2")
  })
})

describe("what TLS trusts and presents", () => {
  const PEM = Tls.rootCertificates[0]!

  it("certificates are found in one pass: a megabyte of BEGIN lines without an END takes milliseconds, not seconds", () => {
    const pem = Tls.rootCertificates[0]!
    expect(Trust.certificatesOf(`junk\n${pem}\n${pem}\r\n`)).toEqual([pem, pem])
    // A block cut short before a whole one: the whole one alone.
    expect(Trust.certificatesOf(`-----BEGIN CERTIFICATE-----\nabc\n${pem}`)).toEqual([pem])
    const hostile = "-----BEGIN CERTIFICATE-----\n".repeat(40_000)
    expect(hostile.length).toBeGreaterThan(1_000_000)
    expect(Trust.certificatesOf(hostile)).toEqual([])
    expect(Trust.caSetting("x".repeat(1024 * 1024 + 1))).toEqual(Either.left("is longer than 1 MiB"))
  })

  it("PEM text is itself; anything else is a file's path", () => {
    expect(Trust.isPem(PEM)).toBe(true)
    expect(Trust.isPem("/etc/ssl/ca.pem")).toBe(false)
  })

  it("a CA is added to Node's roots and NODE_EXTRA_CA_CERTS's, or trusted alone when asked", () => {
    const extra = Tls.rootCertificates[1]!
    const added = Either.getOrThrow(Trust.trustedCas(PEM, false, extra))
    expect(added).toHaveLength(Tls.rootCertificates.length + 2)
    expect(added.at(-1)).toBe(PEM)
    expect(added.at(-2)).toBe(extra)
    expect(Either.getOrThrow(Trust.trustedCas(`${PEM}\n${extra}`, true, extra))).toEqual([PEM, extra])
    expect(Trust.trustedCas("not a certificate", false, undefined)).toEqual(
      Either.left("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    )
    // Shaped like a certificate, but none: refused, naming the block, never showing it.
    const junk = `-----BEGIN CERTIFICATE-----\n${
      Buffer.from("s3cret-ish text").toString("base64")
    }\n-----END CERTIFICATE-----`
    for (
      const [pem, reason] of [
        [junk, "holds a PEM block that is not a certificate (block 1 of 1)"],
        [`${PEM}\n${junk}\n${PEM}`, "holds a PEM block that is not a certificate (block 2 of 3)"],
        // A certificate with one of its lines lost.
        [
          `${PEM}\n${PEM.split("\n").filter((_, line) => line !== 3).join("\n")}`,
          "holds a PEM block that is not a certificate (block 2 of 2)"
        ]
      ] as const
    ) {
      expect(Trust.trustedCas(pem, true, undefined)).toEqual(Either.left(reason))
    }
  })

  it("a client certificate: cert and key, or a pfx, with an optional passphrase; each refusal says which", () => {
    expect(Trust.clientCertificate({ cert: "c.pem", key: "k.pem" })).toMatchObject(
      Either.right({ _tag: "Pem", cert: "c.pem", passphrase: undefined })
    )
    expect(Trust.clientCertificate({ pfx: "c.p12", passphrase: Redacted.make("pw") })).toMatchObject(
      Either.right({ _tag: "Pkcs12", pfx: "c.p12" })
    )
    expect(Trust.clientCertificate({ cert: "c.pem" })).toEqual(
      Either.left("needs key (CLINICAL_CLIENT_KEY_FILE): the private key's PEM text or file path")
    )
    expect(Trust.clientCertificate({ key: "k.pem" })).toEqual(
      Either.left("needs cert (CLINICAL_CLIENT_CERT_FILE): the certificate's PEM text or file path")
    )
    expect(Trust.clientCertificate({ pfx: "c.p12", cert: "c.pem" })._tag).toBe("Left")
    expect(Trust.clientCertificate({ pfx: 12 })._tag).toBe("Left")
    expect(Trust.clientCertificate({ cert: "c", key: "k", passphrase: 5 })._tag).toBe("Left")
    expect(Trust.clientCertificate("c.pem")._tag).toBe("Left")
    // The key and the passphrase are secrets from the start.
    const read = Either.getOrThrow(Trust.clientCertificate({ cert: "c", key: "the-key", passphrase: "the-pass" }))
    expect(JSON.stringify(read)).not.toMatch(/the-key|the-pass/)
  })
})

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

describe("the transport's settings, refused word for word", () => {
  it.each([
    [null, "must be { cert, key, passphrase? } or { pfx, passphrase? }"],
    ["cert.pem", "must be { cert, key, passphrase? } or { pfx, passphrase? }"],
    [{ cert: "c", key: "k", passphrase: 5 }, "has a passphrase (CLINICAL_CLIENT_KEY_PASSPHRASE) that is not text"],
    [
      { pfx: "b.p12", cert: "c" },
      "takes a PKCS#12 bundle (pfx, CLINICAL_CLIENT_PFX_FILE) or a PEM cert and key, not both"
    ],
    [
      { pfx: "b.p12", key: "k" },
      "takes a PKCS#12 bundle (pfx, CLINICAL_CLIENT_PFX_FILE) or a PEM cert and key, not both"
    ],
    [{ pfx: 5 }, "has a pfx (CLINICAL_CLIENT_PFX_FILE) that is neither bytes nor a file path"],
    [{ pfx: " " }, "has a pfx (CLINICAL_CLIENT_PFX_FILE) that is neither bytes nor a file path"]
  ])("clientCertificate %j: %s", (value, reason) => {
    expect(Trust.clientCertificate(value)).toEqual(Either.left(reason))
  })

  it("clientCertificate: a bundle of bytes, or a cert and key with a passphrase, read as given", () => {
    const pfx = new Uint8Array([1, 2, 3])
    const bundle = Either.getOrThrow(Trust.clientCertificate({ pfx }))
    expect(bundle).toMatchObject({ _tag: "Pkcs12", pfx, passphrase: undefined })
    const pem = Either.getOrThrow(Trust.clientCertificate({ cert: " c.pem ", key: "k.pem", passphrase: "p" }))
    expect(JSON.stringify(pem)).not.toContain("k.pem")
  })

  it("ca: at most 1 MiB of text; anything but text refused", () => {
    const pem = (length: number) => "-----BEGIN CERTIFICATE-----".padEnd(length, "A")
    expect(Either.isRight(Trust.caSetting(pem(Trust.MAX_PEM_LENGTH)))).toBe(true)
    expect(Trust.caSetting(pem(Trust.MAX_PEM_LENGTH + 1))).toEqual(Either.left("is longer than 1 MiB"))
    expect(Trust.caSetting(5)).toEqual(
      Either.left("must be the CA's certificates as PEM text, or the path of a PEM file")
    )
  })

  it("a key Node cannot read, or one that is not the certificate's, is named as such", () => {
    expect(Trust.secureContextOf({ cert: "junk", key: "junk" })).toEqual(
      Either.left("is not a PEM certificate and key, or a PKCS#12 bundle, that Node can read")
    )
  })

  it("a proxy URL: at most 2,048 characters, blanks around it dropped, a path, query or fragment refused", () => {
    const long = (length: number) => `http://${"p".repeat(length - "http://:3128".length)}:3128`
    expect(Either.isRight(Proxy.proxyEndpoint(long(2048)))).toBe(true)
    expect(Proxy.proxyEndpoint(long(2049))).toEqual(
      Either.left("must be a proxy URL such as http://proxy.example:3128")
    )
    expect(endpoint("  http://proxy.example:3128  ").origin).toBe("http://proxy.example:3128")
    expect(Proxy.proxyEndpoint(" \t ")).toEqual(Either.left("must be a proxy URL such as http://proxy.example:3128"))
    expect(endpoint(" http://a:b%23@proxy.example ").origin).toBe("http://proxy.example:80")
    for (const extra of ["/path", "/?q=1", "/#f"]) {
      expect(Proxy.proxyEndpoint(`http://proxy.example:3128${extra}`)).toEqual(
        Either.left("must be a proxy's address alone: no path, query or fragment")
      )
    }
    expect(endpoint("http://proxy.example:3128/").origin).toBe("http://proxy.example:3128")
    expect(Redacted.value(endpoint("http://alice@proxy.example").authorization!)).toBe(
      `Basic ${Buffer.from("alice:").toString("base64")}`
    )
  })

  it("the proxy setting: a setting already read is kept; anything else is read as a URL", () => {
    expect(Proxy.proxySetting(Proxy.DIRECT)).toEqual(Either.right(Proxy.DIRECT))
    expect(Proxy.proxySetting({ _tag: "Other" })).toEqual(
      Either.left("must be a proxy URL such as http://proxy.example:3128")
    )
    expect(Proxy.proxySetting(null)).toEqual(Either.left("must be a proxy URL such as http://proxy.example:3128"))
  })

  it("NO_PROXY: a bracketed address with or without a port, a prefix of up to three digits, nothing else", () => {
    const bypassed = (noProxy: string, target: string) => Proxy.bypasses(Proxy.bypassOf(noProxy), new URL(target))
    expect(bypassed("[::1]", "http://[::1]:8080")).toBe(true)
    expect(bypassed("x[::1]", "http://[::1]:8080")).toBe(false)
    expect(bypassed("[::1]:80x", "http://[::1]:80")).toBe(false)
    expect(bypassed("10.0.0.0/16", "https://10.0.200.1")).toBe(true)
    expect(bypassed("10.0.0.0/8/9", "https://10.0.0.1")).toBe(false)
    expect(bypassed("example.com/8", "https://example.com")).toBe(false)
    // An address without a prefix is itself alone, in its family's width.
    expect(bypassed("::1", "http://[::2]")).toBe(false)
    expect(bypassed("fd00::1", "http://[fd00::1:1]")).toBe(false)
  })

  it("the environment's variables in lower case as in upper; no proxy set reads none", () => {
    const via = (env: Record<string, string>, target: string) =>
      Proxy.proxyFor(Either.getOrThrow(Proxy.routesOf(Proxy.FROM_ENVIRONMENT, undefined, env)), new URL(target))?.origin
    expect(via({ all_proxy: "http://all:4" }, "https://api.example")).toBe("http://all:4")
    expect(via({ http_proxy: "http://h:3" }, "http://api.example")).toBe("http://h:3")
    expect(via({ http_proxy: "http://h:3" }, "https://api.example")).toBeUndefined()
    expect(via({ HTTPS_PROXY: "http://s:1" }, "http://api.example")).toBeUndefined()
    expect(via({ HTTPS_PROXY: "http://s:1", no_proxy: "api.example" }, "https://api.example")).toBeUndefined()
    const explicit = Either.getOrThrow(Proxy.proxySetting("http://q:2"))
    const through = Either.getOrThrow(Proxy.routesOf(explicit, undefined, { no_proxy: "api.example" }))
    expect(Proxy.proxyFor(through, new URL("https://api.example"))).toBeUndefined()
    const direct = Either.getOrThrow(Proxy.routesOf(Proxy.DIRECT, undefined, { HTTPS_PROXY: "http://s:1" }))
    expect(direct).toEqual({ http: undefined, https: undefined, bypass: { rules: [] } })
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
