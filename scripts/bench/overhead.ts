/**
 * The client's own cost per call, with the network taken out: `MedicationService.get` over an
 * in-memory transport that answers a precomputed response at once, through the call's common path
 * (the transport offers `dispatch`, as the undici one does) and through the Effect path (it does
 * not), alternating. For profiling the hot path:
 * `node --cpu-prof --import tsx scripts/bench/overhead.ts [calls] [rounds] [common|effect]`.
 */
import { Effect, Either, Layer } from "effect"
import { ClinicalClient, HttpDate, HttpTransport, MedicationService } from "effect-clinical"
import { FIXTURE_PERSONS } from "../../core/testing/fixture.js"

const APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"
const now = Date.now()
const tokenResponse = HttpTransport.jsonResponse(200, { Token: "abc+/=", TokenType: "Bearer" }, {
  TOKEN_EXPIRES: HttpDate.format(now + 3_600_000),
  Date: HttpDate.format(now)
})
const medicationResponse = HttpTransport.jsonResponse(200, {
  Medications: FIXTURE_PERSONS[0]!.medications,
  Success: true,
  ErrorMessage: null,
  ErrorType: null
})
const answer = (request: HttpTransport.TransportRequest) =>
  request.url.endsWith("/Token") ? tokenResponse : medicationResponse

// Bare transports (no Effect-based timeout, unlike layerMemory): only the client is measured.
const paths = {
  common: {
    send: (request: HttpTransport.TransportRequest) => Effect.succeed(answer(request)),
    dispatch: (
      request: HttpTransport.TransportRequest,
      done: (outcome: Either.Either<HttpTransport.TransportResponse, never>) => void
    ) => {
      done(Either.right(answer(request)))
      return () => {}
    }
  },
  effect: { send: (request: HttpTransport.TransportRequest) => Effect.succeed(answer(request)) }
} satisfies Record<string, HttpTransport.Service>

const calls = Number(process.argv[2] ?? 100_000)
const rounds = Number(process.argv[3] ?? 5)
const only = process.argv[4] as keyof typeof paths | undefined
const get = MedicationService.get(FIXTURE_PERSONS[0]!.personUid)

const measure = (path: keyof typeof paths) =>
  Effect.gen(function*() {
    // 32 workers making calls one after another, as the benchmark's (no fiber forked per call).
    let next = 0
    const worker = Effect.whileLoop({ while: () => next < calls, body: () => (next++, get), step: () => {} })
    const cpu = process.cpuUsage()
    yield* Effect.forEach(Array.from({ length: 32 }), () => worker, { concurrency: 32, discard: true })
    const used = process.cpuUsage(cpu)
    return [path, (used.user + used.system) / calls] as const
  }).pipe(
    Effect.provide(
      ClinicalClient.layer({ baseUrl: "https://bench.invalid", applicationId: APPLICATION_ID }).pipe(
        Layer.provide(Layer.succeed(HttpTransport.HttpTransport, paths[path]))
      )
    )
  )

const program = Effect.gen(function*() {
  const results: Record<string, Array<number>> = {}
  const order = only === undefined ? (["common", "effect"] as const) : [only]
  for (let round = 1; round <= rounds; round++) {
    for (const path of round % 2 === 0 ? [...order].reverse() : order) {
      const [name, micros] = yield* measure(path)
      ;(results[name] ??= []).push(micros)
    }
  }
  for (const [name, values] of Object.entries(results)) {
    const sorted = [...values].sort((a, b) => a - b)
    console.log(
      `${name} path, ${calls} calls x ${rounds} rounds: min ${sorted[0]!.toFixed(2)}, median ${
        sorted[Math.floor(rounds / 2)]!.toFixed(2)
      } us of CPU per call`
    )
  }
})

Effect.runPromise(program)
