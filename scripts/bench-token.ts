/**
 * `npm run bench:token`: the token cache. (1) `TokenService.get` on a valid cached token, calls
 * per second (target: at least 1,000,000). (2) 1,000 concurrent `get` calls on a cold cache
 * against the benchmark's loopback server (target: exactly one token request, counted by the
 * server). The library is measured as built (dist/).
 */
import { Effect, Layer } from "effect"
import { ClinicalClient, TokenService } from "effect-clinical"
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"

const APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"

const server = await new Promise<{ url: string; stop: () => void }>((resolve, reject) => {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/bench/server.ts"], { env: process.env })
  child.on("error", reject)
  createInterface({ input: child.stdout }).once("line", (url) => resolve({ url, stop: () => child.kill() }))
})
const tokenRequests = async () => ((await (await fetch(`${server.url}/stats`)).json()) as { token: number }).token

const client = () => ClinicalClient.layerUndici({ baseUrl: server.url, applicationId: APPLICATION_ID })

const cachedRate = Effect.gen(function*() {
  const tokens = yield* TokenService.TokenService
  yield* tokens.get
  const calls = 3_000_000
  let best = 0
  for (let round = 0; round < 5; round++) {
    let i = 0
    const started = performance.now()
    yield* Effect.whileLoop({ while: () => i < calls, body: () => tokens.get, step: () => i++ })
    best = Math.max(best, calls / ((performance.now() - started) / 1000))
  }
  return best
})

const coldStampede = Effect.gen(function*() {
  const before = yield* Effect.promise(tokenRequests)
  const tokens = yield* Effect.all(Array.from({ length: 1_000 }, () => TokenService.get), { concurrency: "unbounded" })
  const after = yield* Effect.promise(tokenRequests)
  return { calls: tokens.length, generations: new Set(tokens.map((t) => t.generation)).size, requests: after - before }
})

try {
  const rate = await Effect.runPromise(Effect.provide(cachedRate, Layer.fresh(client())))
  console.log(
    `TokenService.get on a cached token: ${(rate / 1e6).toFixed(2)} million calls/s (best of 5 rounds of 3,000,000) ${
      rate >= 1e6 ? "PASS" : "FAIL"
    } (target: at least 1,000,000/s)`
  )
  const cold = await Effect.runPromise(Effect.provide(coldStampede, Layer.fresh(client())))
  console.log(
    `1,000 concurrent TokenService.get on a cold cache: ${cold.requests} token request(s) to the server, ${cold.generations} token generation(s) handed out ${
      cold.requests === 1 ? "PASS" : "FAIL"
    } (target: exactly 1)`
  )
  process.exitCode = rate >= 1e6 && cold.requests === 1 ? 0 : 1
} finally {
  server.stop()
}
