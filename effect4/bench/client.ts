/**
 * One measurement of the Effect 4 line, in its own process (as scripts/bench/client.ts is for the
 * Effect 3 line): `node --expose-gc --import tsx effect4/bench/client.ts <kind> <baseUrl> <calls>
 * <concurrency>`. Warms up, then makes `calls` medication calls at `concurrency` and prints one
 * JSON line: client CPU per call and calls per second. Build the package first (`npx tsc -p
 * tsconfig.build.json`; `npm run bench:lines` does). Kinds: `raw-undici` (the two calls by hand
 * over this line's undici), `library-undici` (the Effect 4 client over its default transport, as an
 * Effect application runs it) and, a diagnostic, `library-undici-per-call` (the same client with each
 * call run from a promise by `runtime.runPromise`, as a pool of promise callers would).
 */
import { Effect, Layer, ManagedRuntime } from "effect"
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

/** What a measurement drives: `run(n)` makes `n` calls at the concurrency. */
interface Runner {
  readonly run: (calls: number) => Promise<void>
  readonly close: () => Promise<void>
}

/** `concurrency` workers, each making calls one after another until `calls` are done. */
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

const promiseRunner = (caller: Caller, concurrency: number): Runner => ({
  run: (calls) => pool(calls, concurrency, caller.call),
  close: caller.close
})

/**
 * The Effect 4 client as an Effect application runs it, and as scripts/bench/client.ts runs the
 * Effect 3 line (the same workload): its layer built once, the calls made by `concurrency` fibers
 * in one run (Effect.forEach of workers, each a loop of calls; no fiber or promise per call).
 */
const libraryUndici = async (baseUrl: string, concurrency: number, fibers: boolean): Promise<Runner> => {
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
  const run = (calls: number) => {
    let next = 0
    const worker = Effect.whileLoop({
      while: () => next < calls,
      body: () => Effect.suspend(() => (next++, get)),
      step: () => {}
    })
    return runtime.runPromise(
      Effect.forEach(Array.from({ length: Math.min(concurrency, calls) }), () => worker, {
        concurrency,
        discard: true
      })
    )
  }
  const perCall = promiseRunner({ call: () => runtime.runPromise(get), close: () => Promise.resolve() }, concurrency)
  return { run: fibers ? run : perCall.run, close: () => runtime.dispose() }
}

const [kind, baseUrl, callsText, concurrencyText] = process.argv.slice(2)
const calls = Number(callsText)
const concurrency = Number(concurrencyText)
const runner = kind === "raw-undici"
  ? promiseRunner(await rawUndici(baseUrl!), concurrency)
  : await libraryUndici(baseUrl!, concurrency, kind !== "library-undici-per-call")
await runner.run(Math.max(500, Math.floor(calls / 10)))
globalThis.gc?.()
const cpuBefore = process.cpuUsage()
const started = performance.now()
await runner.run(calls)
const elapsed = performance.now() - started
const used = process.cpuUsage(cpuBefore)
await runner.close()
console.log(JSON.stringify({
  kind,
  concurrency,
  calls,
  cpuMicrosPerCall: (used.user + used.system) / calls,
  callsPerSecond: calls / (elapsed / 1000)
}))
