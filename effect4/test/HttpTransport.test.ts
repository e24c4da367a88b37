/**
 * The Effect 4 line's transports: the in-memory one (its timeout on Effect's clock, its size limit,
 * a send that is not an Effect), and undici's and the platform HttpClient's (fetch) over a real
 * loopback server, told the same (what goes over the wire,
 * a redirect answered and never followed, a body over the limit, a timeout, a refused connection,
 * a secret in a failure's detail scrubbed).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Redacted } from "effect"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { TestClock } from "effect/testing"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Dispatcher } from "undici"
import type { InvalidConfig, TransportError } from "../src/ClinicalError.js"
import * as HttpTransport from "../src/HttpTransport.js"

const TOKEN = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

interface Seen {
  readonly method: string | undefined
  readonly url: string | undefined
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A loopback server answering with `answer`; what it saw, and its URL. */
const serve = (answer: (request: Http.IncomingMessage, response: Http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.callback<{ readonly url: string; readonly seen: Array<Seen> }>((resume) => {
      const seen: Array<Seen> = []
      const server = Http.createServer((request, response) => {
        let body = ""
        request.on("data", (chunk) => (body += chunk))
        request.on("end", () => {
          seen.push({ method: request.method, url: request.url, headers: request.headers, body })
          answer(request, response)
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          seen
        })))
      servers.push(server)
    }),
    () =>
      Effect.sync(() => {
        for (const server of servers.splice(0)) {
          server.closeAllConnections()
          server.close()
        }
      })
  )
const servers: Array<Http.Server> = []

const send = (request: HttpTransport.TransportRequest) =>
  HttpTransport.HttpTransport.use((transport) => transport.send(request))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): Exclude<E, InvalidConfig> => {
  const error = Exit.findErrorOption(exit)
  if (error._tag === "None") throw new Error("expected a failure")
  assert.strictEqual((error.value as TransportError)._tag, "TransportError")
  return error.value as Exclude<E, InvalidConfig>
}

describe("the in-memory transport", () => {
  it.effect("a handler's response is the response; it sees the secrets only through wireHeaders", () =>
    Effect.gen(function*() {
      let authorization: string | undefined
      const layer = HttpTransport.layerMemory((request) => {
        authorization = HttpTransport.wireHeader(request, "authorization")
        return Effect.succeed(HttpTransport.jsonResponse(200, { Success: true }))
      })
      const response = yield* send({
        method: "POST",
        url: "https://api.example/x",
        headers: { Authorization: Redacted.make(`Bearer ${TOKEN}`) }
      }).pipe(Effect.provide(layer))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body, "{\"Success\":true}")
      assert.strictEqual(authorization, `Bearer ${TOKEN}`)
    }))

  it.effect("a handler slower than timeoutMillis fails with Timeout, on Effect's clock", () =>
    Effect.gen(function*() {
      const layer = HttpTransport.layerMemory(() => Effect.never)
      const fiber = yield* Effect.forkChild(Effect.exit(
        send({ method: "GET", url: "https://api.example/slow", headers: {}, timeoutMillis: 1000 }).pipe(
          Effect.provide(layer)
        )
      ))
      yield* TestClock.adjust("999 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      const error = failureOf(yield* Fiber.join(fiber))
      assert.strictEqual(error.reason, "Timeout")
      assert.strictEqual(
        error.message,
        "request GET https://api.example/slow failed (Timeout): no response within 1000 ms"
      )
    }))

  it.effect("a body over maxResponseBytes fails with ResponseTooLarge; at the limit it is read", () =>
    Effect.gen(function*() {
      const layer = HttpTransport.layerMemory(() => Effect.succeed({ status: 200, headers: {}, body: "é".repeat(5) }))
      const at = yield* send({ method: "GET", url: "https://api.example/", headers: {}, maxResponseBytes: 10 }).pipe(
        Effect.provide(layer)
      )
      assert.strictEqual(at.body, "ééééé")
      const over = failureOf(
        yield* Effect.exit(
          send({ method: "GET", url: "https://api.example/", headers: {}, maxResponseBytes: 9 }).pipe(
            Effect.provide(layer)
          )
        )
      )
      assert.strictEqual(over.reason, "ResponseTooLarge")
      assert.strictEqual(over.detail, "the response body exceeds the limit of 9 bytes")
    }))

  it.effect("a handler that returns no Effect fails with a Network error saying so; a handler that is no function fails the layer", () =>
    Effect.gen(function*() {
      const layer = HttpTransport.layerMemory((() => Promise.resolve()) as never)
      const error = failureOf(
        yield* Effect.exit(
          send({ method: "GET", url: "https://api.example/", headers: {} }).pipe(Effect.provide(layer))
        )
      )
      assert.strictEqual(error.detail, "the transport's send did not return an Effect")
      const refused = yield* Effect.exit(
        Effect.provide(
          Effect.void,
          HttpTransport.layerMemory("no" as never) as Layer.Layer<HttpTransport.HttpTransport, unknown>
        )
      )
      assert.isTrue(Exit.isFailure(refused))
      assert.include(String(Exit.findErrorOption(refused).pipe((o) => o._tag === "Some" ? o.value : "")), "handler")
    }))
})

/** The transports over a network, each told the same: undici's, and the platform HttpClient's (fetch). */
const networked: ReadonlyArray<readonly [string, () => Layer.Layer<HttpTransport.HttpTransport, InvalidConfig>]> = [
  ["the undici transport", () => HttpTransport.layerUndici()],
  [
    "the platform HttpClient transport (fetch)",
    () => HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))
  ]
]

for (const [name, transport] of networked) {
  describe(name, () => {
    it.effect("sends the method, path, headers and body, secrets revealed on the wire alone; reads the status, headers and body", () =>
      Effect.gen(function*() {
        const server = yield* serve((_, response) => {
          response.setHeader("x-answer", ["one", "two"])
          response.end("{\"Success\":true}")
        })
        const response = yield* send({
          method: "POST",
          url: `${server.url}/api/Medications?x=1`,
          headers: { Authorization: Redacted.make(`Bearer ${TOKEN}`), "content-type": "application/json" },
          body: Redacted.make("{\"PersonUid\":\"p\"}")
        }).pipe(Effect.provide(transport()))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.body, "{\"Success\":true}")
        assert.strictEqual(response.headers["x-answer"], "one, two")
        assert.isFalse(response.invalidUtf8)
        assert.strictEqual(server.seen.length, 1)
        assert.strictEqual(server.seen[0]!.method, "POST")
        assert.strictEqual(server.seen[0]!.url, "/api/Medications?x=1")
        assert.strictEqual(server.seen[0]!.headers.authorization, `Bearer ${TOKEN}`)
        assert.strictEqual(server.seen[0]!.body, "{\"PersonUid\":\"p\"}")
      }))

    it.effect("a redirect is answered as it is and never followed", () =>
      Effect.gen(function*() {
        const server = yield* serve((request, response) => {
          response.statusCode = request.url === "/start" ? 302 : 200
          response.setHeader("location", "/elsewhere")
          response.end("moved")
        })
        const response = yield* send({ method: "GET", url: `${server.url}/start`, headers: {} }).pipe(
          Effect.provide(transport())
        )
        assert.strictEqual(response.status, 302)
        assert.strictEqual(response.headers.location, "/elsewhere")
        assert.strictEqual(response.body, "")
        assert.deepStrictEqual(server.seen.map((seen) => seen.url), ["/start"])
      }))

    it.effect("a body over the limit, told by its length or by its bytes, fails with ResponseTooLarge", () =>
      Effect.gen(function*() {
        const server = yield* serve((request, response) => {
          if (request.url === "/declared") response.setHeader("content-length", "100")
          response.end("x".repeat(100))
        })
        for (const path of ["/declared", "/chunked"]) {
          const error = failureOf(
            yield* Effect.exit(
              send({ method: "GET", url: `${server.url}${path}`, headers: {}, maxResponseBytes: 99 }).pipe(
                Effect.provide(transport())
              )
            )
          )
          assert.strictEqual(error.reason, "ResponseTooLarge")
        }
      }))

    it.live("a server that does not answer within timeoutMillis: Timeout, the request aborted", () =>
      Effect.gen(function*() {
        const server = yield* serve(() => {})
        const error = failureOf(
          yield* Effect.exit(
            send({ method: "GET", url: `${server.url}/hang`, headers: {}, timeoutMillis: 50 }).pipe(
              Effect.provide(transport())
            )
          )
        )
        assert.strictEqual(error.reason, "Timeout")
        assert.strictEqual(error.detail, "no response within 50 ms")
      }))

    it.effect("a refused connection: Network, and the request surely never sent", () =>
      Effect.gen(function*() {
        const server = yield* serve(() => {})
        const closedUrl = server.url
        for (const open of servers.splice(0)) open.close()
        const error = failureOf(
          yield* Effect.exit(
            send({ method: "GET", url: closedUrl, headers: {} }).pipe(Effect.provide(transport()))
          )
        )
        assert.strictEqual(error.reason, "Network")
        assert.strictEqual(error.requestSent, false)
        assert.include(error.detail, "ECONNREFUSED")
      }))
  })
}

describe("the undici transport", () => {
  it.effect("a failure's detail that repeats a secret of the request, in any form, holds it no more", () =>
    Effect.gen(function*() {
      const echoing: Pick<Dispatcher, "dispatch"> = {
        dispatch: (options) => {
          const headers = options.headers as Record<string, string>
          throw new Error(`refused ${headers.authorization} / ${encodeURIComponent(TOKEN)} / ${TOKEN.toUpperCase()}`)
        }
      }
      const error = failureOf(
        yield* Effect.exit(
          HttpTransport.fromUndiciAgent(echoing).send({
            method: "GET",
            url: "https://api.example/",
            headers: { authorization: Redacted.make(`Bearer ${TOKEN}`) }
          })
        )
      )
      assert.strictEqual(error.reason, "Network")
      assert.notInclude(error.detail.toLowerCase(), TOKEN.slice(4, 20))
      assert.notInclude(JSON.stringify(error).toLowerCase(), TOKEN.slice(4, 20))
      assert.include(error.detail, "<redacted>")
    }))
})
