/**
 * The default transport through a real proxy (issue 26): Debian's tinyproxy with basic auth, started
 * on a free port, whose log proves each tunnel; the proxy from options and from the environment,
 * NO_PROXY, wrong credentials, a proxy that refuses, is not running or never answers, an https proxy.
 */
import { Effect, Exit } from "effect"
import { ClinicalClient, type ClinicalConfig, TokenService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as Net from "node:net"
import * as Tls from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Leaks from "./support/Leaks.js"
import { call, expectFailure, medications, pki, proxy, startPkiAndProxy } from "./support/networkFixtures.js"
import * as Tinyproxy from "./support/Tinyproxy.js"

startPkiAndProxy()

describe("through a real proxy (tinyproxy with basic auth)", () => {
  let https: MockClinicalServer.Started
  let http: MockClinicalServer.Started
  beforeAll(async () => {
    https = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    http = await MockClinicalServer.start()
  })
  afterAll(async () => {
    await https?.close()
    await http?.close()
  })
  const trusted = () => ({ ca: pki.ca.cert })
  const target = (mock: MockClinicalServer.Started) => new URL(mock.url).host

  it("an https target is tunnelled with CONNECT through the proxy the option names, credentials and all", async () => {
    const before = proxy.tunnels().length
    const exit = await call(https, medications(https), { ...trusted(), proxy: proxy.url })
    expect(Exit.isSuccess(exit)).toBe(true)
    const tunnels = proxy.tunnels().slice(before)
    expect(tunnels.length).toBeGreaterThanOrEqual(1)
    expect(new Set(tunnels)).toEqual(new Set([target(https)]))
    expect((await https.counters()).tokenRequests).toBeGreaterThanOrEqual(1)
  })

  it("the proxy from the environment (HTTPS_PROXY), and NO_PROXY going around it", async () => {
    const before = proxy.tunnels().length
    expect(Exit.isSuccess(await call(https, medications(https), trusted(), { HTTPS_PROXY: proxy.url }))).toBe(true)
    expect(proxy.tunnels().length).toBeGreaterThan(before)
    const after = proxy.tunnels().length
    const bypassing = { https_proxy: proxy.url, NO_PROXY: "example.org, localhost" }
    expect(Exit.isSuccess(await call(https, medications(https), trusted(), bypassing))).toBe(true)
    expect(proxy.tunnels().length).toBe(after)
  })

  it("an http target takes HTTP_PROXY, tunnelled too; proxy: false goes direct whatever the environment says", async () => {
    const before = proxy.tunnels().length
    expect(Exit.isSuccess(await call(http, medications(http), {}, { HTTP_PROXY: proxy.url }))).toBe(true)
    expect(proxy.tunnels().slice(before)).toContain(target(http))
    const after = proxy.tunnels().length
    // NO_PROXY goes around it for http targets as for https ones (by address: the mock is 127.0.0.1).
    expect(Exit.isSuccess(await call(http, medications(http), {}, { HTTP_PROXY: proxy.url, NO_PROXY: "127.0.0.0/8" })))
      .toBe(true)
    expect(Exit.isSuccess(await call(http, medications(http), { proxy: proxy.url, noProxy: "127.0.0.1" }, {})))
      .toBe(true)
    expect(proxy.tunnels().length).toBe(after)
    const deadProxy = { HTTP_PROXY: "http://127.0.0.1:9", HTTPS_PROXY: "http://127.0.0.1:9" }
    expect(Exit.isSuccess(await call(http, medications(http), { proxy: false }, deadProxy))).toBe(true)
    expect(proxy.tunnels().length).toBe(after)
  })

  it("wrong credentials: a Proxy error that says so, nothing reaches the service, no password in it", async () => {
    await https.resetCounters()
    const wrong = `http://${proxy.user}:not-${proxy.password}@127.0.0.1:${proxy.port}`
    const exit = await call(https, TokenService.get, { ...trusted(), proxy: wrong })
    expectFailure(exit, {
      _tag: "TransportError",
      reason: "Proxy",
      requestSent: false,
      detail: `the proxy ${proxy.origin} refused the credentials (HTTP 401): check the proxy's user and password`
    })
    expect((await https.counters()).tokenRequests).toBe(0)
    Leaks.expectNoneInExit(exit, [`not-${proxy.password}`, proxy.password, `${proxy.user}:not-${proxy.password}`])
  })

  it("a proxy URL with a user alone, or a password alone, sends its Proxy-Authorization on the CONNECT", async () => {
    // A proxy that records each tunnel request's head and refuses it.
    const heads: Array<string> = []
    const recording = Net.createServer((socket) => {
      let head = ""
      socket.on("data", (chunk) => {
        head += chunk.toString("latin1")
        if (!head.includes("\r\n\r\n")) return
        heads.push(head)
        socket.end("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
      })
      socket.on("error", () => {})
    })
    await new Promise<void>((resolve) => recording.listen(0, "127.0.0.1", resolve))
    try {
      const port = (recording.address() as Net.AddressInfo).port
      const authorizations = []
      for (const credentials of ["alice@", ":s3cret@", ""]) {
        const exit = await call(https, TokenService.get, {
          ...trusted(),
          proxy: `http://${credentials}127.0.0.1:${port}`
        })
        expectFailure(exit, { _tag: "TransportError", reason: "Proxy" })
        const head = heads.at(-1)!
        expect(head).toMatch(new RegExp(`^CONNECT ${target(https)} HTTP/1\\.1\r\n`))
        authorizations.push(/^proxy-authorization: (.*)$/im.exec(head)?.[1] ?? null)
      }
      const basic = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`
      expect(authorizations).toEqual([basic("alice:"), basic(":s3cret"), null])
    } finally {
      recording.close()
    }
  })

  it("a proxy that allows tunnels to port 443 alone: a Proxy error naming the host and port to ask for", async () => {
    const strict = await Tinyproxy.start(undefined, ["ConnectPort 443"])
    try {
      await https.resetCounters()
      const exit = await call(https, TokenService.get, { ...trusted(), proxy: strict.url })
      expectFailure(exit, {
        _tag: "TransportError",
        reason: "Proxy",
        requestSent: false,
        detail: `the proxy ${strict.origin} refused to connect to ${target(https)} (HTTP 403): ask for ${
          target(https)
        } to be allowed`
      })
      expect((await https.counters()).tokenRequests).toBe(0)
    } finally {
      await strict.stop()
    }
  })

  it("a proxy that is not running: the error names the proxy, not the service", async () => {
    const exit = await call(https, TokenService.get, { ...trusted(), proxy: "http://127.0.0.1:9" })
    expectFailure(exit, {
      _tag: "TransportError",
      reason: "Network",
      requestSent: false,
      detail: "the proxy http://127.0.0.1:9 refused the connection (ECONNREFUSED)"
    })
  })

  it("a proxy that takes the connection and never answers the tunnel request: the connect timeout, and the client closes", async () => {
    const silent = Net.createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    try {
      const port = (silent.address() as Net.AddressInfo).port
      const exit = await Effect.runPromiseExit(Effect.provide(
        TokenService.get,
        ClinicalClient.layerUndici({
          baseUrl: https.url,
          applicationId: https.applicationId,
          proxy: `http://127.0.0.1:${port}`,
          connectTimeout: "300ms"
        })
      ))
      // Not the token request's own timeout (10 s), nor undici's 300 s wait for headers.
      expectFailure(exit, {
        _tag: "TransportError",
        reason: "Network",
        detail: `the proxy http://127.0.0.1:${port} did not answer the tunnel request within the connect timeout`
      })
    } finally {
      silent.close()
    }
  })

  it("the connection settings reach the tunnels: connections bounds them, keepAliveTimeout ends idle ones", async () => {
    /** Tunnels opened while `effect` runs on a client of ClinicalClient.layerUndici with `settings`. */
    const tunnelsDuring = async (
      settings: Partial<ClinicalConfig.Options>,
      effect: (mark: Effect.Effect<void>) => Effect.Effect<unknown, unknown, ClinicalClient.Services>
    ) => {
      let from = proxy.tunnels().length
      const mark = Effect.sync(() => void (from = proxy.tunnels().length))
      const layer = ClinicalClient.layerUndici({
        baseUrl: https.url,
        applicationId: https.applicationId,
        proxy: proxy.url,
        ca: pki.ca.cert,
        ...settings
      })
      expect(Exit.isSuccess(await Effect.runPromiseExit(Effect.provide(effect(mark), layer)))).toBe(true)
      return proxy.tunnels().length - from
    }
    const four = () => Effect.all(Array.from({ length: 4 }, () => medications(https)), { concurrency: "unbounded" })
    expect(await tunnelsDuring({ connections: 1 }, four)).toBe(1)
    expect(await tunnelsDuring({}, four)).toBeGreaterThan(1)
    // A second call 300 ms after the first: on the first's connection, unless it was let go meanwhile
    // (the setting caps a server's Keep-Alive hint too: the mock's says 5 s).
    const secondCall = (mark: Effect.Effect<void>) =>
      medications(https).pipe(
        Effect.zipRight(Effect.sleep("300 millis")),
        Effect.zipRight(mark),
        Effect.zipRight(medications(https))
      )
    expect(await tunnelsDuring({}, secondCall)).toBe(0)
    expect(await tunnelsDuring({ keepAliveTimeout: "50ms" }, secondCall)).toBe(1)
  })

  it("an https proxy (TLS to the proxy, then the tunnel): its certificate trusted through ca", async () => {
    // TLS in front of tinyproxy, as an https proxy is.
    const front = Tls.createServer({ cert: pki.server.cert, key: pki.server.key }, (socket) => {
      const upstream = Net.connect(proxy.port, "127.0.0.1")
      socket.pipe(upstream).pipe(socket)
      upstream.on("error", () => socket.destroy())
      socket.on("error", () => upstream.destroy())
    })
    await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve))
    try {
      const port = (front.address() as Net.AddressInfo).port
      const httpsProxy = `https://${proxy.user}:${proxy.password}@localhost:${port}`
      const before = proxy.tunnels().length
      expect(Exit.isSuccess(await call(https, medications(https), { ...trusted(), proxy: httpsProxy }))).toBe(true)
      expect(proxy.tunnels().length).toBeGreaterThan(before)
      // Without the CA, the proxy's own certificate is refused.
      expectFailure(await call(https, TokenService.get, { proxy: httpsProxy }), {
        _tag: "TransportError",
        reason: "Tls"
      })
    } finally {
      front.close()
    }
  })

  it("a proxy variable that is not a proxy URL fails the layer, naming the variable and not the value", async () => {
    const exit = await call(https, TokenService.get, {}, { HTTPS_PROXY: "proxy.internal:3128" })
    expectFailure(exit, {
      _tag: "InvalidConfig",
      setting: "HTTPS_PROXY",
      reason: "must start with http:// or https://"
    })
    Leaks.expectNoneInExit(exit, ["proxy.internal"])
  })
})
