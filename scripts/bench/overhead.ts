/**
 * The client's own cost per call, with the network taken out: `MedicationService.get` over an
 * in-memory transport that answers a precomputed response. For profiling the hot path
 * (`node --cpu-prof --import tsx scripts/bench/overhead.ts`).
 */
import { Effect, Layer } from "effect"
import { ClinicalClient, HttpDate, HttpTransport, MedicationService } from "effect-clinical"
import { FIXTURE_PERSONS } from "../../src/testing/fixture.js"

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
// A bare transport (no Effect-based timeout, unlike layerMemory): only the client is measured.
const transport = Layer.succeed(HttpTransport.HttpTransport, {
  send: (request) => Effect.succeed(request.url.endsWith("/Token") ? tokenResponse : medicationResponse)
})
const client = ClinicalClient.layer({ baseUrl: "https://bench.invalid", applicationId: APPLICATION_ID }).pipe(
  Layer.provide(transport)
)
const calls = Number(process.argv[2] ?? 100_000)
const get = MedicationService.get(FIXTURE_PERSONS[0]!.personUid)

const program = Effect.gen(function*() {
  const rounds = Number(process.argv[3] ?? 5)
  const results: Array<number> = []
  for (let round = 1; round <= rounds; round++) {
    const cpu = process.cpuUsage()
    yield* Effect.forEach(Array.from({ length: calls }), () => get, { concurrency: 32, discard: true })
    const used = process.cpuUsage(cpu)
    results.push((used.user + used.system) / calls)
  }
  const sorted = [...results].sort((a, b) => a - b)
  console.log(
    `${calls} calls x ${rounds} rounds: min ${sorted[0]!.toFixed(2)}, median ${
      sorted[Math.floor(rounds / 2)]!.toFixed(2)
    } us of CPU per call`
  )
})

Effect.runPromise(program.pipe(Effect.provide(client)))
