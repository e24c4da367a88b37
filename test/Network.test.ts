/**
 * The default transport through a real proxy and real TLS (issue 26): Debian's tinyproxy with basic
 * auth, started on a free port, whose log proves each tunnel; the mock served over HTTPS with
 * certificates `openssl` makes at run time (a private CA, a certificate for another host, an
 * expired one, client certificates the server asks for). What each test asserts is what a user
 * sees: the call's answer, or the typed error and what it says to check; and that the proxy's
 * password, the key's passphrase and the client's secrets are in no output.
 */
import { Cause, Duration, Effect, Exit, Layer, Option, Redacted } from "effect"
import { ClinicalClient, type ClinicalConfig, HttpTransport, MedicationService, TokenService } from "effect-clinical"
import { createClinicalClient, createClinicalClientFromEnv } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import * as Tls from "node:tls"
import { promisify } from "node:util"
import type * as Undici from "undici"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import * as Network from "../src/internal/transport/network.js"
import * as Proxy from "../src/internal/transport/proxy.js"
import { fromNetwork } from "../src/internal/transport/undici.js"
import * as Cli from "./support/Cli.js"
import * as Leaks from "./support/Leaks.js"
import * as Pki from "./support/Pki.js"
import * as Tinyproxy from "./support/Tinyproxy.js"

const execFile = promisify(ChildProcess.execFile)
const execFileSyncText = (file: string, args: ReadonlyArray<string>) =>
  ChildProcess.execFileSync(file, args, { encoding: "utf8" }).trim()

let pki: Pki.Pki
let proxy: Tinyproxy.Tinyproxy
beforeAll(async () => {
  pki = Pki.make()
  proxy = await Tinyproxy.start()
}, 30_000)
afterAll(async () => {
  await proxy?.stop()
  pki?.remove()
})

type Env = Readonly<Record<string, string>>

/** The real undici, for what `Network.make` checks: it makes dispatchers and never connects them. */
const undiciForChecks = await import("undici")

/** The default transport over `options`, reading `env` where it would read the process's environment. */
const transport = (options: HttpTransport.UndiciOptions, env: Env) =>
  Layer.scoped(HttpTransport.HttpTransport, Effect.map(Network.acquire(options, env), fromNetwork))

/** One call of `effect` on a fresh client of `mock` (no retries: each failure is the first one). */
const call = <A, E>(
  mock: MockClinicalServer.Started,
  effect: Effect.Effect<A, E, ClinicalClient.Services>,
  options: HttpTransport.UndiciOptions = {},
  env: Env = {}
) =>
  Effect.runPromiseExit(
    effect.pipe(
      Effect.provide(
        ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 0 }).pipe(
          Layer.provide(transport(options, env))
        )
      )
    )
  )

const medications = (mock: MockClinicalServer.Started) => MedicationService.get(mock.persons[0]!.personUid)

/** The typed failure of an exit, for `toMatchObject`. */
const failureOf = (exit: Exit.Exit<unknown, unknown>): unknown =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

const expectFailure = (exit: Exit.Exit<unknown, unknown>, expected: object) => {
  expect(failureOf(exit)).toMatchObject(expected)
}

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

describe("what undici is given (an undici of records: what the real one does with it is tested above)", () => {
  interface Made {
    readonly kind: string
    readonly origin: string | undefined
    readonly options: Record<string, any>
    destroyed: boolean
  }
  /** undici's four classes as records of how they were made; `close` never ends when `stuck`. */
  const recordingUndici = (stuck = false) => {
    const made: Array<Made> = []
    const dispatcher = (kind: string) =>
      class {
        readonly record: Made
        constructor(first: string | Record<string, any>, second?: Record<string, any>) {
          this.record = typeof first === "string"
            ? { kind, origin: first, options: second ?? {}, destroyed: false }
            : { kind, origin: undefined, options: first, destroyed: false }
          made.push(this.record)
        }
        close() {
          return stuck ? new Promise<void>(() => {}) : Promise.resolve()
        }
        destroy() {
          this.record.destroyed = true
          return Promise.resolve()
        }
      }
    const undici = {
      Agent: dispatcher("Agent"),
      ProxyAgent: dispatcher("ProxyAgent"),
      Pool: dispatcher("Pool"),
      Client: dispatcher("Client")
    } as unknown as typeof Undici
    return { undici, made }
  }
  const networkOf = (undici: typeof Undici, options: HttpTransport.UndiciOptions, env: Env = {}) => {
    const built = Network.make(undici, options, env)
    if (built._tag === "Left") throw new Error(built.left.message)
    return built.right
  }

  it("a tunnel waits the connect timeout (10 s unless set) to open, and for the proxy's answer to its request", () => {
    for (const [connectTimeout, expected] of [[undefined, 10_000], [300, 300]] as const) {
      const { made, undici } = recordingUndici()
      const network = networkOf(undici, {
        proxy: "http://proxy.example:3128",
        ...(connectTimeout === undefined ? {} : { connectTimeout })
      })
      network.routeOf("https://api.example")
      const tunnel = made.find((record) => record.kind === "ProxyAgent")!
      expect(tunnel.options).toMatchObject({
        uri: "http://proxy.example:3128",
        requestTls: { timeout: expected },
        proxyTls: { timeout: expected }
      })
      tunnel.options.clientFactory("http://proxy.example:3128", { connections: 2 })
      expect(made.at(-1)).toMatchObject({
        kind: "Pool",
        origin: "http://proxy.example:3128",
        options: { connections: 2, headersTimeout: expected, bodyTimeout: expected }
      })
    }
  })

  it("one dispatcher per way out: the direct one, one tunnel per proxy; each origin routed once", () => {
    const { made, undici } = recordingUndici()
    const network = networkOf(undici, { noProxy: "internal.example" }, {
      HTTPS_PROXY: "http://user:pw@proxy.example:3128",
      HTTP_PROXY: "http://proxy.example:3128"
    })
    const api = network.routeOf("https://api.example")
    expect(network.routeOf("https://api.example")).toBe(api)
    expect(api.route).toEqual({
      host: "api.example",
      port: 443,
      https: true,
      proxy: "http://proxy.example:3128",
      clientCertificate: false
    })
    expect(network.routeOf("http://other.example:8080").dispatcher).toBe(api.dispatcher)
    expect(network.routeOf("http://other.example:8080").route).toMatchObject({ port: 8080, https: false })
    expect(network.routeOf("http://api.example").route.port).toBe(80)
    const direct = network.routeOf("https://internal.example")
    expect(direct.route.proxy).toBeUndefined()
    expect(direct.dispatcher).not.toBe(api.dispatcher)
    // Those made to check the options when the layer was built are destroyed at once.
    const tunnels = made.filter((record) => record.kind === "ProxyAgent" && !record.destroyed)
    expect(tunnels).toHaveLength(1)
    // The credentials go to undici as the Proxy-Authorization value, never in the URL.
    expect(tunnels[0]!.options.token).toBe(
      `Basic ${Buffer.from("user:pw").toString("base64")}`
    )
    // More origins than are kept are still routed, each the same way.
    for (let i = 0; i < 100; i++) {
      expect(network.routeOf(`https://host-${i}.internal.example`).route).toMatchObject({ proxy: undefined })
    }
  })

  it("closing what closes at once destroys nothing later; 64 origins are kept routed, more are routed each time", async () => {
    vi.useFakeTimers()
    try {
      const { made, undici } = recordingUndici()
      const network = networkOf(undici, {})
      await network.close()
      await vi.advanceTimersByTimeAsync(5000)
      expect(made.filter((record) => record.kind === "Agent").map((record) => record.destroyed)).toEqual([false])
    } finally {
      vi.useRealTimers()
    }
    const { undici } = recordingUndici()
    const network = networkOf(undici, {})
    for (let i = 0; i < 64; i++) network.routeOf(`https://host-${i}.example`)
    expect(network.routeOf("https://host-63.example")).toBe(network.routeOf("https://host-63.example"))
    expect(network.routeOf("https://host-64.example")).not.toBe(network.routeOf("https://host-64.example"))
  })

  it("closing waits 2 s for what is still in flight, then destroys", async () => {
    vi.useFakeTimers()
    try {
      const { made, undici } = recordingUndici(true)
      const network = networkOf(undici, { proxy: "http://proxy.example:3128" })
      network.routeOf("https://api.example")
      let closed = false
      const closing = network.close().then(() => (closed = true))
      // The Agent and the tunnel (the Pool, Client and ProxyAgent made to check the options are destroyed at once).
      const dispatchers = made.filter((record) =>
        (record.kind === "Agent" || record.kind === "ProxyAgent") && !record.destroyed
      )
      expect(dispatchers).toHaveLength(2)
      await vi.advanceTimersByTimeAsync(1999)
      expect(closed).toBe(false)
      expect(dispatchers.map((record) => record.destroyed)).toEqual([false, false])
      await vi.advanceTimersByTimeAsync(1)
      await closing
      expect(dispatchers.map((record) => record.destroyed)).toEqual([true, true])
    } finally {
      vi.useRealTimers()
    }
  })
})

// From the transport's mutation run (npm run mutate:transport): the wiring no test said yet.
describe("what a client's network settings become, before any connection", () => {
  const refusal = (options: unknown, env: Env = {}) => {
    const built = Network.make(undiciForChecks, options as HttpTransport.UndiciOptions, env)
    return built._tag === "Left" ? { setting: built.left.setting, reason: built.left.reason } : undefined
  }
  const dir = Fs.mkdtempSync(Path.join(Fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "network-settings-"))
  afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

  it("the settings given become options; those not given stay out, for undici's defaults", () => {
    const base = { proxy: Proxy.DIRECT, caOnly: false }
    const none = Network.optionsOf({
      ...base,
      noProxy: undefined,
      ca: undefined,
      clientCertificate: undefined,
      connections: undefined,
      keepAliveTimeout: undefined,
      connectTimeout: undefined
    })
    expect(Object.keys(none).sort()).toEqual(["caOnly", "proxy"])
    const certificate = { _tag: "Pem", cert: "c.pem", key: Redacted.make("k.pem"), passphrase: undefined } as const
    const all = Network.optionsOf({
      ...base,
      noProxy: "internal.example",
      ca: "ca.pem",
      clientCertificate: certificate,
      connections: 4,
      keepAliveTimeout: Duration.seconds(3),
      connectTimeout: Duration.seconds(2)
    })
    expect(all).toEqual({
      ...base,
      noProxy: "internal.example",
      ca: "ca.pem",
      clientCertificate: certificate,
      connections: 4,
      keepAliveTimeout: 3000,
      keepAliveMaxTimeout: 3000,
      connectTimeout: 2000
    })
  })

  it("each refusal names its setting: ca, caOnly, clientCertificate, proxy", () => {
    expect(refusal({ ca: 5 })).toEqual({
      setting: "ca",
      reason: "must be the CA's certificates as PEM text, or the path of a PEM file"
    })
    expect(refusal({ caOnly: true })).toEqual({ setting: "caOnly", reason: "needs ca: the CA to trust alone" })
    expect(refusal({ clientCertificate: null })).toEqual({
      setting: "clientCertificate",
      reason: "must be { cert, key, passphrase? } or { pfx, passphrase? }"
    })
    expect(refusal({ proxy: "ftp://proxy.example" })).toEqual({
      setting: "proxy",
      reason: "must start with http:// or https://"
    })
    // Node's TLS refusing the certificate and key is the client certificate's refusal, beside a ca.
    expect(refusal({ ca: Tls.rootCertificates[0], clientCertificate: { cert: "-----BEGIN x", key: "-----BEGIN y" } }))
      .toEqual({
        setting: "clientCertificate",
        reason: "is not a PEM certificate and key, or a PKCS#12 bundle, that Node can read"
      })
  })

  it("a file a setting names: read up to 1 MiB; a larger one, a directory or a missing one refused by name", () => {
    const exactly = Path.join(dir, "exactly.p12")
    Fs.writeFileSync(exactly, Buffer.alloc(1024 * 1024, 1))
    const larger = Path.join(dir, "larger.p12")
    Fs.writeFileSync(larger, Buffer.alloc(1024 * 1024 + 1, 1))
    expect(refusal({ clientCertificate: { pfx: exactly } })?.reason).not.toMatch(/larger/)
    expect(refusal({ clientCertificate: { pfx: larger } })).toEqual({
      setting: "clientCertificate.pfx",
      reason: "names a file larger than 1 MiB"
    })
    expect(refusal({ ca: dir })).toEqual({ setting: "ca", reason: "names something that is not a file" })
    expect(refusal({ ca: Path.join(dir, "missing.pem") })).toEqual({
      setting: "ca",
      reason: "names a file that cannot be read (ENOENT)"
    })
  })

  it("a connector function is kept when nothing is to be added to it; refused beside any proxy; options merged", () => {
    const connector = (() => {}) as unknown as Undici.buildConnector.connector
    expect(refusal({ connect: connector })).toBeUndefined()
    expect(refusal({ connect: connector }, { HTTP_PROXY: "http://proxy.example:3128" })?.setting).toBe(
      "agentOptions.connect"
    )
    expect(refusal({ connect: null })).toBeUndefined()
    expect(refusal({ connect: { timeout: 5 } })).toBeUndefined()
  })

  it("undici's refusal is named by the option its message names, else agentOptions", () => {
    expect(Network.refusedOption("invalid keepAliveTimeout", { keepAliveTimeout: -5 })).toBe(
      "agentOptions.keepAliveTimeout"
    )
    expect(Network.refusedOption("invalid value", { keepAliveTimeout: -5 })).toBe("agentOptions")
    expect(Network.refusedOption("", {})).toBe("agentOptions")
    expect(Network.refusedOption("-- 42 --", { a: 1 })).toBe("agentOptions")
  })

  it("agentOptions that are not an object fail the layer; none at all is undici's defaults", async () => {
    expect(Exit.isSuccess(await Effect.runPromiseExit(Effect.scoped(Network.acquire(undefined))))).toBe(true)
    for (const options of [5, null, "x"]) {
      const exit = await Effect.runPromiseExit(Effect.scoped(Network.acquire(options as never)))
      expect(Exit.isFailure(exit) ? Cause.failureOption(exit.cause).pipe(Option.getOrUndefined) : undefined)
        .toMatchObject({
          _tag: "InvalidConfig",
          setting: "agentOptions",
          reason: "must be an object of undici Agent options"
        })
    }
  })
})

describe("real TLS", () => {
  const serve = (pair: Pki.Pair, more: { readonly host?: string; readonly requestCert?: boolean } = {}) =>
    MockClinicalServer.start({
      tls: {
        cert: pair.cert,
        key: pair.key,
        ...(more.host === undefined ? {} : { host: more.host }),
        ...(more.requestCert === true ? { ca: pki.clientCa.cert, requestCert: true } : {})
      }
    })

  it("a private CA: trusted from its PEM text, from its file, alone; refused without it, saying what to set", async () => {
    await using mock = await serve(pki.server)
    for (const options of [{ ca: pki.ca.cert }, { ca: pki.ca.certFile }, { ca: pki.ca.certFile, caOnly: true }]) {
      expect(Exit.isSuccess(await call(mock, medications(mock), options))).toBe(true)
    }
    expectFailure(await call(mock, TokenService.get), {
      _tag: "TransportError",
      reason: "Tls",
      requestSent: false,
      detail: expect.stringMatching(
        /^the server's certificate is not signed by a CA this client trusts \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): give your network's CA as ca \(CLINICAL_CA_FILE\)/
      )
    })
    // Trusting another CA alone does not trust this one.
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.cert, caOnly: true }), { reason: "Tls" })
  })

  it("with a ca, NODE_EXTRA_CA_CERTS's certificates are kept beside it (Node drops them when given a ca); caOnly drops them", async () => {
    await using mock = await serve(pki.server)
    // The server's CA in NODE_EXTRA_CA_CERTS alone, another CA as ca (the environment as the transport reads it).
    const extra = { NODE_EXTRA_CA_CERTS: pki.ca.certFile }
    expect(Exit.isSuccess(await call(mock, medications(mock), { ca: pki.clientCa.certFile }, extra))).toBe(true)
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.certFile, caOnly: true }, extra), {
      reason: "Tls"
    })
    // Unreadable, it is left out as Node leaves it out (with a warning of its own): the ca alone is added.
    const missing = { NODE_EXTRA_CA_CERTS: Path.join(pki.dir, "no-such.pem") }
    expect(Exit.isSuccess(await call(mock, medications(mock), { ca: pki.ca.certFile }, missing))).toBe(true)
    expectFailure(await call(mock, TokenService.get, { ca: pki.clientCa.certFile }, { NODE_EXTRA_CA_CERTS: "" }), {
      reason: "Tls"
    })
  })

  it("a ca that names no usable file, or holds no certificate, fails the layer saying so", async () => {
    await using mock = await serve(pki.server)
    const large = Path.join(pki.dir, "large.pem")
    Fs.writeFileSync(large, "x".repeat(1024 * 1024 + 1))
    // A mebibyte of blocks shaped like certificates, none of them one; and one such block after the real CA.
    const block = `-----BEGIN CERTIFICATE-----\n${
      Buffer.from("not a certificate at all").toString("base64")
    }\n-----END CERTIFICATE-----\n`
    const junk = Path.join(pki.dir, "junk.pem")
    Fs.writeFileSync(junk, block.repeat(Math.floor(1024 * 1024 / block.length)))
    const blocks = Math.floor(1024 * 1024 / block.length)
    const cases: ReadonlyArray<readonly [string, string]> = [
      [large, "names a file larger than 1 MiB"],
      [junk, `holds a PEM block that is not a certificate (block 1 of ${blocks})`],
      [`${pki.ca.cert}\n${block}`, "holds a PEM block that is not a certificate (block 2 of 2)"],
      [pki.dir, "names something that is not a file"],
      [Path.join(pki.dir, "missing.pem"), "names a file that cannot be read (ENOENT)"],
      [pki.client.keyFile, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"]
    ]
    for (const [ca, reason] of cases) {
      expectFailure(await call(mock, TokenService.get, { ca }), { _tag: "InvalidConfig", setting: "ca", reason })
    }
  })

  it("agentOptions.connect beside ca, a client certificate and a proxy: its TLS options reach the connection, direct and tunnelled", async () => {
    // The URL names 127.0.0.1, the certificate localhost: undici's connect option servername says which name to check.
    await using mock = await serve(pki.server, { host: "127.0.0.1" })
    const servername: HttpTransport.UndiciOptions = { ca: pki.ca.cert, connect: { servername: "localhost" } }
    const clientCertificate = { cert: pki.client.certFile, key: pki.client.keyFile }
    const before = proxy.tunnels().length
    for (const options of [servername, { ...servername, clientCertificate }, { ...servername, proxy: proxy.url }]) {
      const exit = await call(mock, medications(mock), options)
      expect(Exit.isSuccess(exit), JSON.stringify(failureOf(exit))).toBe(true)
    }
    expect(proxy.tunnels().slice(before)).toContain(new URL(mock.url).host)
  })

  it("a connector function cannot take ca, a client certificate or a proxy's tunnels: refused, not dropped", async () => {
    await using mock = await serve(pki.server)
    const connect = (() => {}) as unknown as NonNullable<HttpTransport.UndiciOptions["connect"]>
    const cases: ReadonlyArray<readonly [HttpTransport.UndiciOptions, Env]> = [
      [{ connect, ca: pki.ca.cert }, {}],
      [{ connect, clientCertificate: { cert: pki.client.certFile, key: pki.client.keyFile } }, {}],
      [{ connect, proxy: proxy.url }, {}],
      [{ connect }, { HTTPS_PROXY: proxy.url }]
    ]
    for (const [options, env] of cases) {
      expectFailure(await call(mock, TokenService.get, options, env), {
        _tag: "InvalidConfig",
        setting: "agentOptions.connect",
        reason: expect.stringMatching(/^is a function: /)
      })
    }
  })

  it("undici options undici refuses fail the layer, naming the option, before any request", async () => {
    await using mock = await serve(pki.server)
    const cases: ReadonlyArray<readonly [object, string, RegExp]> = [
      [
        { connect: 5 },
        "agentOptions.connect",
        /^must be undici's connect options \(an object\) or a connector function$/
      ],
      [{ connect: "x" }, "agentOptions.connect", /^must be undici's connect options/],
      [{ keepAliveTimeout: -5 }, "agentOptions.keepAliveTimeout", /^was refused by undici: .*keepAliveTimeout/],
      [{ headersTimeout: "x" }, "agentOptions.headersTimeout", /^was refused by undici: .*headersTimeout/],
      [{ connections: -1 }, "agentOptions.connections", /^was refused by undici: .*connections/],
      [{ socketTimeout: 5 }, "agentOptions.socketTimeout", /^was refused by undici: .*socketTimeout/]
    ]
    await mock.resetCounters()
    for (const [options, setting, reason] of cases) {
      expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert, ...options }), {
        _tag: "InvalidConfig",
        setting,
        reason: expect.stringMatching(reason)
      })
    }
    expect((await mock.counters()).tokenRequests).toBe(0)
    // The Promise client: its first call rejects with the same.
    const clinical = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      ca: pki.ca.cert,
      agentOptions: { connect: 5 } as never
    })
    try {
      await expect(clinical.token()).rejects.toMatchObject({ _tag: "InvalidConfig", setting: "agentOptions.connect" })
    } finally {
      await clinical.close()
    }
  })

  it("undici options only its ProxyAgent refuses fail the layer too, when a proxy is set (they died at the first request)", async () => {
    await using mock = await serve(pki.server)
    await mock.resetCounters()
    const withCredentials = "http://user:s3cret@127.0.0.1:9"
    const cases: ReadonlyArray<readonly [object, Env, string]> = [
      [{ auth: "Basic eA==", proxy: withCredentials }, {}, "agentOptions.auth"],
      [{ auth: "Basic eA==" }, { HTTPS_PROXY: withCredentials }, "agentOptions.auth"],
      // undici's message names no option ("Cannot create property 'proxy-authorization' on
      // number '5'"): not the proxy setting, whose name the message holds.
      [{ headers: 5, proxy: withCredentials }, {}, "agentOptions"]
    ]
    for (const [options, env, setting] of cases) {
      const exit = await call(mock, TokenService.get, { ca: pki.ca.cert, ...options }, env)
      expectFailure(exit, { _tag: "InvalidConfig", setting, reason: expect.stringMatching(/^was refused by undici: /) })
      expect(JSON.stringify(exit)).not.toContain("s3cret")
    }
    expect((await mock.counters()).tokenRequests).toBe(0)
  })

  it("a certificate for another host name is refused, naming the host", async () => {
    await using mock = await serve(pki.server, { host: "127.0.0.1" })
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      _tag: "TransportError",
      reason: "Tls",
      detail:
        "the server's certificate is not for 127.0.0.1 (ERR_TLS_CERT_ALTNAME_INVALID): check the host name in the URL"
    })
  })

  it("an expired certificate is refused as expired", async () => {
    await using mock = await serve(pki.expired)
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      reason: "Tls",
      detail: expect.stringMatching(/^the server's certificate has expired \(CERT_HAS_EXPIRED\)/)
    })
  })

  it("a certificate not valid yet is refused as such, pointing at the clock", async () => {
    await using mock = await serve(pki.notYetValid)
    expectFailure(await call(mock, TokenService.get, { ca: pki.ca.cert }), {
      _tag: "TransportError",
      reason: "Tls",
      requestSent: false,
      detail: "the server's certificate is not valid yet (CERT_NOT_YET_VALID): check this machine's clock"
    })
  })

  it("mutual TLS: the client's certificate as PEM files, with an encrypted key, as PKCS#12; refused without one or with a stranger's", async () => {
    await using mock = await serve(pki.server, { requestCert: true })
    const ca = { ca: pki.ca.cert }
    const accepted: ReadonlyArray<HttpTransport.NetworkOptions["clientCertificate"]> = [
      { cert: pki.client.certFile, key: pki.client.keyFile },
      { cert: pki.client.cert, key: Redacted.make(pki.client.key) },
      { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: Redacted.make(Pki.PASSPHRASE) },
      { pfx: pki.clientP12File, passphrase: Pki.PASSPHRASE }
    ]
    for (const clientCertificate of accepted) {
      expect(Exit.isSuccess(await call(mock, medications(mock), { ...ca, clientCertificate }))).toBe(true)
    }
    // TLS 1.3: the server refuses after the client's side of the handshake; undici sees the connection close.
    expectFailure(await call(mock, TokenService.get, ca), {
      _tag: "TransportError",
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server requires a client certificate, set clientCertificate (CLINICAL_CLIENT_CERT_FILE and CLINICAL_CLIENT_KEY_FILE)"
    })
    const stranger = await call(mock, TokenService.get, {
      ...ca,
      clientCertificate: { cert: pki.stranger.certFile, key: pki.stranger.keyFile }
    })
    expectFailure(stranger, {
      _tag: "TransportError",
      reason: "Network",
      detail:
        "UND_ERR_SOCKET: other side closed; if the server checks client certificates, it may have refused this one: check clientCertificate"
    })
  })

  it("a client certificate Node cannot use fails the layer, naming the setting, never the key or passphrase", async () => {
    await using mock = await serve(pki.server)
    const cases: ReadonlyArray<readonly [HttpTransport.NetworkOptions["clientCertificate"], RegExp]> = [
      [
        { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: "wrong-Pa55phrase" },
        /does not open with the passphrase/
      ],
      [{ pfx: pki.clientP12File, passphrase: "wrong-Pa55phrase" }, /does not open with the passphrase/],
      [{ cert: pki.client.certFile, key: pki.stranger.keyFile }, /its key does not belong to its certificate/],
      [{ cert: pki.client.certFile, key: `${pki.dir}/no-such.key` }, /^names a file that cannot be read \(ENOENT\)$/],
      // A device that never ends, a directory: refused before anything is read.
      [{ cert: "/dev/zero", key: pki.client.keyFile }, /^names something that is not a file$/],
      [{ pfx: pki.dir, passphrase: Pki.PASSPHRASE }, /^names something that is not a file$/]
    ]
    for (const [clientCertificate, reason] of cases) {
      const exit = await call(mock, TokenService.get, { ca: pki.ca.cert, clientCertificate })
      expectFailure(exit, { _tag: "InvalidConfig", reason: expect.stringMatching(reason) })
      expect((failureOf(exit) as { setting: string }).setting).toMatch(/^clientCertificate/)
      Leaks.expectNoneInExit(exit, ["wrong-Pa55phrase", Pki.PASSPHRASE, pki.stranger.key.split("\n")[1]!])
    }
  })
})

describe("the privacy suite over proxy, TLS and a client certificate", () => {
  it("no secret in any log line or error: the token, the ApplicationId, the PersonUid, the proxy's password, the key's passphrase", async () => {
    await using mock = await MockClinicalServer.start({
      tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.clientCa.cert, requestCert: true }
    })
    const options: HttpTransport.UndiciOptions = {
      proxy: Redacted.make(proxy.url),
      ca: pki.ca.certFile,
      clientCertificate: { cert: pki.client.certFile, key: pki.clientEncryptedKeyFile, passphrase: Pki.PASSPHRASE }
    }
    const logs = Leaks.captureLogs()
    const personUid = mock.persons[0]!.personUid
    const run = <A, E>(effect: Effect.Effect<A, E, ClinicalClient.Services>, more: HttpTransport.UndiciOptions = {}) =>
      Effect.runPromiseExit(effect.pipe(
        Effect.provide(
          ClinicalClient.layer({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 1 }).pipe(
            Layer.provide(transport({ ...options, ...more }, {}))
          )
        ),
        Effect.provide(logs.layer)
      ))
    expect(Exit.isSuccess(await run(MedicationService.get(personUid)))).toBe(true)
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(503), MockClinicalServer.Fault.drop])
    const exits = [
      await run(MedicationService.get(personUid)),
      await run(MedicationService.get("no-such-person-0000")),
      await run(TokenService.get, { proxy: `http://${proxy.user}:wrong@127.0.0.1:${proxy.port}` })
    ]
    expect(exits.map((exit) => exit._tag)).toEqual(["Failure", "Failure", "Failure"])
    const token = Object.entries((await mock.requestLog()).find((r) => r.operation === "medications")!.headers)
      .find(([name]) => name.toLowerCase() === "authorization")![1].replace(/^Bearer /, "")
    const secrets = [token, mock.applicationId, personUid, proxy.password, Pki.PASSPHRASE]
    for (const exit of exits) Leaks.expectNoneInExit(exit, secrets)
    expect(logs.lines.length).toBeGreaterThan(0)
    for (const line of logs.lines) Leaks.expectNone("log line", line, secrets)
  })
})

describe("the settings reach the transport, from options and from CLINICAL_* variables", { timeout: 60_000 }, () => {
  let mock: MockClinicalServer.Started
  beforeAll(async () => {
    mock = await MockClinicalServer.start({
      tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.clientCa.cert, requestCert: true }
    })
  })
  afterAll(async () => {
    await mock?.close()
  })
  const personUid = () => mock.persons[0]!.personUid

  it("ClinicalClient.layerUndici: proxy, CA and client certificate as options (README's snippet)", async () => {
    const before = proxy.tunnels().length
    const [baseUrl, applicationId, proxyUrl] = [mock.url, mock.applicationId, proxy.url]
    const [caFile, certFile, keyFile, keyPassphrase] = [
      pki.ca.certFile,
      pki.client.certFile,
      pki.clientEncryptedKeyFile,
      Pki.PASSPHRASE
    ]
    // #region behind-a-proxy
    const ClinicalLive = ClinicalClient.layerUndici({
      baseUrl,
      applicationId,
      // The network's egress proxy (http://user:password@proxy:3128): a secret, for its password.
      proxy: Redacted.make(proxyUrl),
      // The CA that signs the network's TLS, trusted besides Node's own.
      ca: caFile,
      // The certificate the service issued for mutual TLS, its key encrypted.
      clientCertificate: { cert: certFile, key: keyFile, passphrase: Redacted.make(keyPassphrase) }
    })
    // #endregion
    const exit = await Effect.runPromiseExit(MedicationService.get(personUid()).pipe(Effect.provide(ClinicalLive)))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(proxy.tunnels().length).toBeGreaterThan(before)
  })

  it("the Promise client: createClinicalClient's options, and createClinicalClientFromEnv's variables", async () => {
    const before = proxy.tunnels().length
    const fromOptions = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      proxy: Redacted.make(proxy.url),
      ca: pki.ca.cert,
      clientCertificate: { pfx: pki.clientP12File, passphrase: Pki.PASSPHRASE }
    })
    const fromEnv = createClinicalClientFromEnv({
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId,
      CLINICAL_PROXY: proxy.url,
      CLINICAL_CA_FILE: pki.ca.certFile,
      CLINICAL_CLIENT_CERT_FILE: pki.client.certFile,
      CLINICAL_CLIENT_KEY_FILE: pki.clientEncryptedKeyFile,
      CLINICAL_CLIENT_KEY_PASSPHRASE: Pki.PASSPHRASE
    })
    try {
      for (const clinical of [fromOptions, fromEnv]) {
        expect((await clinical.medications(personUid())).medications.length).toBeGreaterThan(0)
      }
    } finally {
      await fromOptions.close()
      await fromEnv.close()
    }
    expect(proxy.tunnels().length).toBeGreaterThanOrEqual(before + 2)
  })

  it("NODE_EXTRA_CA_CERTS keeps working, with a ca added beside it; with caOnly, only ca is trusted", async () => {
    const plain = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    try {
      const script = [
        `import { createClinicalClient } from ${JSON.stringify(Path.resolve("dist/src/promise.js"))}`,
        "const [url, applicationId, personUid, options] = process.argv.slice(1)",
        "const clinical = createClinicalClient({ baseUrl: url, applicationId, maxRetries: 0, ...JSON.parse(options) })",
        "try { await clinical.medications(personUid); console.log('ok') }",
        "catch (error) { console.log(`${error._tag} ${error.reason}`) } finally { await clinical.close() }"
      ].join("\n")
      // Not execFileSync: the mock answers from this process's event loop.
      const run = async (options: object) =>
        (await execFile(process.execPath, [
          "--input-type=module",
          "-e",
          script,
          plain.url,
          plain.applicationId,
          plain.persons[0]!.personUid,
          JSON.stringify(options)
        ], { env: { ...process.env, NODE_EXTRA_CA_CERTS: pki.ca.certFile }, encoding: "utf8" })).stdout.trim()
      expect(await run({})).toBe("ok")
      expect(await run({ ca: pki.clientCa.certFile })).toBe("ok")
      expect(await run({ ca: pki.clientCa.certFile, caOnly: true })).toBe("TransportError Tls")
    } finally {
      await plain.close()
    }
  })
})

// Child processes (the built executable, node): the suite's budget for them, as in Cli.test.ts.
describe("effect-clinical probe through the proxy, over TLS", { timeout: 60_000 }, () => {
  it("reports the proxy in use (never its credentials), the TLS version and the server certificate's issuer and expiry", async () => {
    await using mock = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    const env = {
      ...Cli.settingsFor(mock.url),
      CLINICAL_PROXY: proxy.url,
      CLINICAL_CA_FILE: pki.ca.certFile
    }
    const before = proxy.tunnels().length
    const json = await Cli.run(["probe", "--json"], { env })
    expect(json.code, json.stderr).toBe(0)
    const expires = new Date(
      execFileSyncText("openssl", ["x509", "-enddate", "-noout", "-in", pki.server.certFile])
        .replace(/^notAfter=/, "")
    ).toISOString()
    expect(JSON.parse(json.stdout).connection).toEqual({
      proxy: proxy.origin,
      tls: { version: "TLSv1.3", issuer: "CN=effect-clinical test CA", expires }
    })
    expect(proxy.tunnels().length).toBeGreaterThan(before)
    const table = await Cli.run(["probe"], { env })
    expect(table.code, table.stderr).toBe(0)
    expect(table.stdout).toMatch(new RegExp(`proxy\\s+${proxy.origin.replace(/\./g, "\\.")}\\n`))
    expect(table.stdout).toMatch(/TLS\s+TLSv1\.3\n/)
    expect(table.stdout).toMatch(/server certificate issuer\s+CN=effect-clinical test CA\n/)
    for (const ran of [json, table]) {
      Leaks.expectNone("probe output", ran.stdout + ran.stderr, [proxy.password, `${proxy.user}:${proxy.password}`])
    }
    // Direct, over plain HTTP: no proxy, no TLS.
    await using plain = await MockClinicalServer.start()
    const direct = await Cli.run(["probe", "--json"], {
      env: { ...Cli.settingsFor(plain.url), CLINICAL_PROXY: "none" }
    })
    expect(JSON.parse(direct.stdout).connection).toEqual({ proxy: null, tls: null })
  })

  it("reports the TLS through the tunnel when the server is trusted by NODE_EXTRA_CA_CERTS, the proxy on the same host name", async () => {
    await using mock = await MockClinicalServer.start({ tls: { cert: pki.server.cert, key: pki.server.key } })
    // The proxy named as the service is (localhost): its own connection, plain, is another origin.
    const proxyUrl = proxy.url.replace("127.0.0.1", "localhost")
    const before = proxy.tunnels().length
    const ran = await Cli.run(["probe", "--json"], {
      env: { ...Cli.settingsFor(mock.url), HTTPS_PROXY: proxyUrl, NODE_EXTRA_CA_CERTS: pki.ca.certFile }
    })
    expect(ran.code, ran.stderr).toBe(0)
    expect(JSON.parse(ran.stdout).connection).toEqual({
      proxy: `http://localhost:${proxy.port}`,
      tls: { version: "TLSv1.3", issuer: "CN=effect-clinical test CA", expires: expect.any(String) }
    })
    expect(proxy.tunnels().length).toBeGreaterThan(before)
  })
})
