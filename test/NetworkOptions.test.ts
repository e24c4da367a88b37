/**
 * What the default transport gives undici (an undici of records: the real one's part is in
 * NetworkProxy.test.ts and NetworkTls.test.ts), and what a client's network settings become, or which
 * setting is refused, before any connection.
 */
import { Cause, Duration, Effect, Exit, Option, Redacted } from "effect"
import { HttpTransport } from "effect-clinical"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Tls from "node:tls"
import type * as Undici from "undici"
import { afterAll, describe, expect, it, vi } from "vitest"
import * as Network from "../src/internal/transport/network.js"
import * as Proxy from "../src/internal/transport/proxy.js"
import { type Env } from "./support/networkFixtures.js"

/** The real undici, for what `Network.make` checks: it makes dispatchers and never connects them. */
const undiciForChecks = await import("undici")

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
