/**
 * One instance of a fleet, in a process of its own (test/Fleet.test.ts starts several, transpiled,
 * with "effect-clinical" pointed at the library as built, `dist/`): its own Redis connection, its own client. It prints `ready` once connected,
 * waits for `go` on standard input, makes CALLS medication calls (0: until `stop`), CONCURRENCY at
 * a time, spread over the persons, and prints one JSON line: how many succeeded, and the failures
 * by tag. Meanwhile it prints `token <fingerprint> <count>` for its first 16 calls that succeed with each token.
 *
 * Settings from the environment: MOCK_URL, APPLICATION_ID, PERSON_UIDS (comma-separated),
 * REDIS_PORT, REDIS_CLIENT (ioredis | node-redis), CALLS, CONCURRENCY, CLIENT_SETTINGS and
 * STORE_SETTINGS (JSON objects merged into the client's and the store's options), PAUSE_AFTER_TOKEN,
 * START_AT_ONCE (calls start with the process, without waiting for `go`).
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, TokenService, TokenStore } from "effect-clinical"
import { Redis } from "ioredis"
import * as Readline from "node:readline"
import { createClient } from "redis"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}

const connect = async (): Promise<{ redis: TokenStore.RedisCommands; close: () => void }> => {
  const port = Number(env("REDIS_PORT"))
  if (env("REDIS_CLIENT") === "ioredis") {
    // Exactly as docs/scaling.md wires it: no queue while disconnected, no resending after a
    // reconnect, an error listener, and no waiting for the connection (the calls may start first).
    const client = new Redis(`redis://127.0.0.1:${port}`, {
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false
    })
    client.on("error", () => {})
    return { redis: TokenStore.ioredis(client), close: () => client.disconnect() }
  }
  const client = createClient({ url: `redis://127.0.0.1:${port}`, disableOfflineQueue: true })
  client.on("error", () => {})
  await client.connect()
  return { redis: TokenStore.nodeRedis(client), close: () => client.destroy() }
}

const main = async () => {
  const { close, redis } = await connect()
  // Standard input drives it: `go` starts the calls, `stop` ends them early (with CALLS 0, the
  // calls go on until then), `publish` lets a paused publication go on.
  let stopped = false
  let go: () => void
  let publish: () => void
  const started = new Promise<void>((resolve) => (go = resolve))
  const published = new Promise<void>((resolve) => (publish = resolve))
  Readline.createInterface({ input: process.stdin }).on("line", (line) => {
    if (line.trim() === "go") go()
    if (line.trim() === "stop") stopped = true
    if (line.trim() === "publish") publish()
  })

  const store = TokenStore.layerRedis({ redis, ...JSON.parse(process.env.STORE_SETTINGS ?? "{}") })
  // PAUSE_AFTER_TOKEN: this instance stops once its token has arrived, before it reads it and
  // publishes it, as a process stopped by a long pause would, until told `publish`.
  const transport = process.env.PAUSE_AFTER_TOKEN === "1"
    ? Layer.effect(
      HttpTransport.HttpTransport,
      Effect.map(HttpTransport.HttpTransport, (inner): HttpTransport.Service => ({
        send: (request) =>
          request.url.endsWith("/api/Server/Token")
            ? Effect.zipLeft(inner.send(request), Effect.promise(() => published))
            : inner.send(request)
      }))
    ).pipe(Layer.provide(HttpTransport.layerUndici()))
    : HttpTransport.layerUndici()
  const client = ClinicalClient.layer({
    baseUrl: env("MOCK_URL"),
    applicationId: env("APPLICATION_ID"),
    ...JSON.parse(process.env.CLIENT_SETTINGS ?? "{}")
  }).pipe(Layer.provide(transport), Layer.provide(store))
  const runtime = ManagedRuntime.make(client)
  await runtime.runPromise(Effect.void)
  const persons = env("PERSON_UIDS").split(",")
  const calls = Number(env("CALLS"))
  const concurrency = Number(env("CONCURRENCY"))
  process.stdout.write("ready\n")
  // START_AT_ONCE: the calls start with the process, Redis perhaps not connected yet.
  if (process.env.START_AT_ONCE !== "1") await started

  // For its first 16 calls that succeed with a token, a line `token <fingerprint> <count>`: the test
  // can wait until every instance's calls have gone on with the fleet's new token a while, all
  // their refused calls resent (an event, not a time).
  let current = ""
  let count = 0
  const reportToken = async () => {
    const fingerprint = TokenStore.fingerprint((await runtime.runPromise(TokenService.get)).token)
    if (fingerprint !== current) [current, count] = [fingerprint, 0]
    if (++count <= 16) process.stdout.write(`token ${current} ${count}\n`)
  }

  let succeeded = 0
  const failed: Record<string, number> = {}
  let next = 0
  const more = () => !stopped && (calls === 0 || next < calls)
  const worker = async () => {
    while (more()) {
      const personUid = persons[next++ % persons.length]!
      const exit = await runtime.runPromiseExit(MedicationService.get(personUid))
      if (exit._tag === "Success") {
        succeeded++
        await reportToken()
      } else {
        const tag = exit.cause._tag === "Fail" ? (exit.cause.error as { _tag: string })._tag : exit.cause._tag
        failed[tag] = (failed[tag] ?? 0) + 1
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  // Which token it ended with, by fingerprint (never the token).
  const token = await runtime.runPromise(TokenService.get)
  const fingerprint = TokenStore.fingerprint(token.token)
  process.stdout.write(`${JSON.stringify({ succeeded, failed, fingerprint, source: token.source })}\n`)
  await runtime.dispose()
  close()
  process.stdin.destroy()
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
