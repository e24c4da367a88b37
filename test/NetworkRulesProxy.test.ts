/**
 * Which proxy a target goes through, as pure functions (src/internal/transport/proxy.ts): a proxy
 * URL read into its origin and authorization, what NO_PROXY bypasses, the routes of a setting in an
 * environment. The same, for real, through tinyproxy: test/NetworkProxy.test.ts.
 */
import { Either, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import * as Proxy from "../src/internal/transport/proxy.js"
import { endpoint } from "./support/networkFixtures.js"

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
