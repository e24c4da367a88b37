/**
 * The Effect 4 line's default transport on a real network: through a real proxy (tinyproxy with
 * basic auth, the credentials from its URL) to an https server whose private CA is trusted by
 * setting, and its settings refused by name (the core's rules: core/transport/network.ts), never
 * with a value.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Redacted } from "effect"
import * as Https from "node:https"
import type { AddressInfo } from "node:net"
import * as Pki from "../../test/support/Pki.js"
import * as Tinyproxy from "../../test/support/Tinyproxy.js"
import * as HttpTransport from "../src/HttpTransport.js"

let pki: Pki.Pki
let proxy: Tinyproxy.Tinyproxy
let server: Https.Server
let target: string

beforeAll(async () => {
  pki = Pki.make()
  proxy = await Tinyproxy.start()
  server = Https.createServer({ cert: pki.server.cert, key: pki.server.key }, (_, response) => response.end("ok"))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  target = `https://localhost:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
  await proxy?.stop()
  pki?.remove()
})

const get = (url: string) =>
  HttpTransport.HttpTransport.use((transport) => transport.send({ method: "GET", url, headers: {} }))

const refusalOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  const error = Exit.findErrorOption(exit)
  if (error._tag === "None") throw new Error("expected a refusal")
  return error.value
}

describe("the undici transport's network (Effect 4)", () => {
  it.effect("through a proxy with basic auth (a Redacted URL) to a server trusted through ca: one tunnel, the answer read", () =>
    Effect.gen(function*() {
      const before = proxy.tunnels().length
      const response = yield* get(`${target}/x`).pipe(
        Effect.provide(HttpTransport.layerUndici({ proxy: Redacted.make(proxy.url), ca: pki.ca.cert }))
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body, "ok")
      assert.deepStrictEqual(proxy.tunnels().slice(before), [target.replace("https://", "")])
    }))

  it.effect("without the CA the server's certificate is refused: Tls, saying what to check", () =>
    Effect.gen(function*() {
      const error = refusalOf(
        yield* Effect.exit(get(target).pipe(Effect.provide(HttpTransport.layerUndici({ proxy: false }))))
      )
      assert.strictEqual(error._tag, "TransportError")
      if (error._tag === "TransportError") assert.strictEqual(error.reason, "Tls")
    }))

  it.effect("a refused setting fails the layer, named, its value never shown", () =>
    Effect.gen(function*() {
      const cases = [
        [{ ca: "/no/such/ca.pem" }, "invalid setting ca: names a file that cannot be read (ENOENT)"],
        [{ caOnly: true }, "invalid setting caOnly: needs ca: the CA to trust alone"],
        [{ proxy: "ftp://user:s3cret-Pr0xy@proxy.example" }, "invalid setting proxy:"],
        [{ keepAliveTimeout: -5 }, "invalid setting agentOptions.keepAliveTimeout:"]
      ] as const
      for (const [options, message] of cases) {
        const error = refusalOf(yield* Effect.exit(Effect.provide(Effect.void, HttpTransport.layerUndici(options))))
        assert.strictEqual(error._tag, "InvalidConfig")
        assert.include(error.message, message)
        assert.notInclude(JSON.stringify(error) + error.message, "s3cret-Pr0xy")
      }
    }))
})
