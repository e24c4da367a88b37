/**
 * One batch measurement, in its own process: `node --expose-gc --import tsx scripts/bench/batch.ts
 * <kind> <baseUrl> <persons> <concurrency>`. `library-getMany` streams the persons (a generator:
 * the input is never held whole) through `PersonData.getMany` over the undici client and keeps only
 * counts; `library-forEach` makes the same calls with `Effect.forEach` over an array;
 * `raw-undici` makes them by hand with a promise pool. Prints one JSON line: calls
 * per second, CPU per call, the heap before, at its highest (sampled) and after (forced GCs).
 */
import { Effect, ManagedRuntime, Stream } from "effect"
import { ClinicalClient, PersonData } from "effect-clinical"
import { APPLICATION_ID, PERSON_UID, promisePool, rawUndici } from "./client.js"

export interface BatchMeasurement {
  readonly kind: string
  readonly persons: number
  readonly concurrency: number
  readonly callsPerSecond: number
  readonly cpuMicrosPerCall: number
  readonly heapBeforeBytes: number
  readonly heapPeakBytes: number
  readonly heapAfterBytes: number
  readonly succeeded: number
}

const heapUsed = () => {
  for (let i = 0; i < 3; i++) globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

function* persons(count: number) {
  for (let i = 0; i < count; i++) yield PERSON_UID
}

const measure = async (
  kind: string,
  baseUrl: string,
  count: number,
  concurrency: number
): Promise<BatchMeasurement> => {
  let succeeded = 0
  let run: () => Promise<void>
  let close = async () => {}
  if (kind === "raw-undici") {
    const caller = await rawUndici(baseUrl)
    close = caller.close
    await promisePool(500, concurrency, caller.call, [])
    run = async () => {
      await promisePool(count, concurrency, async () => {
        await caller.call()
        succeeded++
      }, [])
    }
  } else {
    const client = ClinicalClient.layerUndici({
      baseUrl,
      applicationId: APPLICATION_ID,
      maxConcurrentRequests: concurrency
    })
    // library-forEach: the same calls through Effect.forEach over an array, for the cost of the
    // stream itself (getMany) beside the library's cost per call.
    const batch = (n: number) =>
      kind === "library-forEach"
        ? Effect.forEach(
          Array.from(persons(n)),
          (personUid) => Effect.map(PersonData.get(PersonData.medications, personUid), () => succeeded++),
          { concurrency, discard: true }
        )
        : PersonData.getMany(PersonData.medications, persons(n), { concurrency }).pipe(
          Stream.runForEach(({ outcome }) => Effect.sync(() => outcome._tag === "Success" && succeeded++))
        )
    const runtime = ManagedRuntime.make(client)
    close = () => runtime.dispose()
    await runtime.runPromise(batch(500))
    run = () => runtime.runPromise(batch(count))
  }
  succeeded = 0
  const heapBefore = heapUsed()
  let peak = heapBefore
  const sampler = setInterval(() => peak = Math.max(peak, process.memoryUsage().heapUsed), 50)
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  await run()
  const wall = performance.now() - started
  const cpu = process.cpuUsage(cpuBefore)
  clearInterval(sampler)
  const heapAfter = heapUsed()
  await close()
  return {
    kind,
    persons: count,
    concurrency,
    callsPerSecond: count / (wall / 1000),
    cpuMicrosPerCall: (cpu.user + cpu.system) / count,
    heapBeforeBytes: heapBefore,
    heapPeakBytes: peak,
    heapAfterBytes: heapAfter,
    succeeded
  }
}

if (process.argv[1]?.endsWith("batch.ts")) {
  const [kind, baseUrl, count, concurrency] = process.argv.slice(2)
  measure(kind!, baseUrl!, Number(count), Number(concurrency)).then(
    (result) => console.log(JSON.stringify(result)),
    (error) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
