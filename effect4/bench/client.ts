/**
 * One measurement of the Effect 4 line, in its own process (as scripts/bench/client.ts is for the
 * Effect 3 line): `node --expose-gc --import tsx effect4/bench/client.ts <kind> <baseUrl> <calls>
 * <concurrency>`. Warms up, then makes `calls` medication calls at `concurrency` and prints one
 * JSON line: client CPU per call and calls per second. Build the package first (`npx tsc -p
 * tsconfig.build.json`; `npm run bench:lines` does). Kinds: `raw-undici` (the two calls by hand
 * over this line's undici) and `library-undici` (the Effect 4 client over its default transport).
 */
import { Layer, ManagedRuntime } from "effect"
// The package as built (dist/), as users run it: tsconfig.bench.json maps no name to src/.
import { ClinicalClient, MedicationService } from "effect-clinical"
import type * as Undici from "undici"
import {
  APPLICATION_ID,
  type Caller,
  librarySettings,
  PERSON_UID,
  rawUndiciOver
} from "../../scripts/bench/rawUndici.js"

/** The two calls by hand over this line's undici (8). */
const rawUndici = async (baseUrl: string): Promise<Caller> =>
  // undici is CommonJS: its names are read from the module (a named import finds none under tsx).
  rawUndiciOver<Undici.Agent>((await import("undici")) as typeof Undici, baseUrl)

/** The Effect 4 client, each call run from a Promise (as a pool of callers would). */
const libraryUndici = async (baseUrl: string, concurrency: number): Promise<Caller> => {
  const runtime = ManagedRuntime.make(
    ClinicalClient.layerUndici({
      baseUrl,
      applicationId: APPLICATION_ID,
      ...librarySettings(concurrency)
    })
      .pipe(Layer.orDie)
  )
  const get = MedicationService.get(PERSON_UID)
  await runtime.runPromise(get)
  return { call: () => runtime.runPromise(get), close: () => runtime.dispose() }
}

const pool = async (calls: number, concurrency: number, call: () => Promise<unknown>) => {
  let next = 0
  const worker = async () => {
    while (next < calls) {
      next++
      await call()
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, worker))
}

const [kind, baseUrl, callsText, concurrencyText] = process.argv.slice(2)
const calls = Number(callsText)
const concurrency = Number(concurrencyText)
const caller = kind === "raw-undici" ? await rawUndici(baseUrl!) : await libraryUndici(baseUrl!, concurrency)
await pool(Math.max(500, Math.floor(calls / 10)), concurrency, caller.call)
globalThis.gc?.()
const cpuBefore = process.cpuUsage()
const started = performance.now()
await pool(calls, concurrency, caller.call)
const elapsed = performance.now() - started
const used = process.cpuUsage(cpuBefore)
await caller.close()
console.log(JSON.stringify({
  kind,
  concurrency,
  calls,
  cpuMicrosPerCall: (used.user + used.system) / calls,
  callsPerSecond: calls / (elapsed / 1000)
}))
