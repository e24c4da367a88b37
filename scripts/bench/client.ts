/**
 * One benchmark measurement, in its own process: `node --expose-gc --import tsx
 * scripts/bench/client.ts <kind> <baseUrl> <calls> <concurrency>`. Warms up, then makes `calls`
 * medication calls at `concurrency` and prints one JSON line: client CPU per call, calls per
 * second, latency percentiles and the heap growth (after forced GCs).
 */
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Tracer } from "effect"
import { ClinicalClient, HttpTransport, MedicationService } from "effect-clinical"
import * as Fs from "node:fs"
import { Session } from "node:inspector/promises"
import { PerformanceObserver } from "node:perf_hooks"
import { Agent, request } from "undici"
import { APPLICATION_ID, type Caller, librarySettings, PERSON_UID, rawUndiciOver } from "./rawUndici.js"

export const KINDS = [
  "plain-dispatch",
  "raw-undici",
  "platform-httpclient",
  "platform-fetch",
  "fetch",
  "library-undici",
  "library-undici-traced",
  "library-fetch",
  "adapter-fetch"
] as const
/** Diagnostic kinds, not part of the published table: the library's transport alone, and an Effect.forEach floor. */
export const DIAGNOSTIC_KINDS = [
  "transport-only",
  "effect-floor",
  "platform-fetch-untraced",
  // The library through the proxy whose URL BENCH_PROXY holds (npm run bench:proxy).
  "library-undici-proxied"
] as const
export type Kind = (typeof KINDS)[number] | (typeof DIAGNOSTIC_KINDS)[number]

export interface Measurement {
  readonly kind: Kind
  readonly concurrency: number
  readonly calls: number
  readonly cpuMicrosPerCall: number
  readonly callsPerSecond: number
  readonly p50Millis: number
  readonly p99Millis: number
  readonly heapDeltaBytes: number
  /** Time spent in garbage collection during the timed calls, per call (from the `gc` performance entries). */
  readonly gcMicrosPerCall: number
}

export { APPLICATION_ID, PERSON_UID } from "./rawUndici.js"

export const promisePool = async (
  calls: number,
  concurrency: number,
  call: () => Promise<unknown>,
  latencies: Array<number>
) => {
  let next = 0
  const worker = async () => {
    while (next < calls) {
      next++
      const started = performance.now()
      await call()
      latencies.push(performance.now() - started)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, calls) }, worker))
}

/** The two calls by hand, over undici: a token once, then POSTs with the headers and a JSON body. */
export const rawUndici = (baseUrl: string): Promise<Caller> => rawUndiciOver({ Agent, request }, baseUrl)

/**
 * The floor: the same two calls in plain JavaScript over undici's `Dispatcher.dispatch`, with a
 * handler of its own that collects the body's chunks (no stream, no promise per chunk): what any
 * client over this socket layer costs at least.
 */
export const plainDispatch = async (baseUrl: string): Promise<Caller> => {
  const agent = new Agent()
  const { origin } = new URL(baseUrl)
  const send = (path: string, headers: Record<string, string>, body: string) =>
    new Promise<unknown>((resolve, reject) => {
      const chunks: Array<Buffer> = []
      agent.dispatch({ origin, path, method: "POST", headers, body }, {
        onRequestStart: () => {},
        onResponseStart: () => {},
        onResponseData: (_, chunk: Buffer) => {
          chunks.push(chunk)
        },
        onResponseEnd: () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))),
        onResponseError: (_, error: Error) => reject(error)
      })
    })
  const { Token } = (await send(
    "/api/Server/Token",
    { "content-type": "application/json" },
    JSON.stringify({ ApplicationId: APPLICATION_ID })
  )) as { Token: string }
  const headers = {
    "content-type": "application/json",
    authorization: `Bearer ${Token}`,
    applicationid: APPLICATION_ID
  }
  return {
    call: () => send("/api/clinical/medication/get", headers, JSON.stringify({ personuid: PERSON_UID })),
    close: () => agent.close()
  }
}

/** The same two calls by hand, over global fetch. */
const rawFetch = async (baseUrl: string): Promise<Caller> => {
  const tokenResponse = await fetch(`${baseUrl}/api/Server/Token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ApplicationId: APPLICATION_ID })
  })
  const { Token } = (await tokenResponse.json()) as { Token: string }
  const url = `${baseUrl}/api/clinical/medication/get`
  return {
    call: async () => {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${Token}`,
          applicationid: APPLICATION_ID
        },
        body: JSON.stringify({ personuid: PERSON_UID })
      })
      return response.json()
    },
    close: async () => {}
  }
}

/**
 * A tracer installed, which makes Effect's own spans (and keeps them nowhere): what a client costs
 * with a tracer, less the tracer's own export. With none installed (Effect's default tracer), the
 * library makes no span, since none could be seen.
 */
const installedTracer = (() => {
  const effects = Effect.runSync(Effect.tracer)
  return Tracer.make({ span: effects.span, context: effects.context })
})()

/**
 * Runs an Effect-based client: its layer built once, its context provided once around the whole
 * run (as an application does), calls through Effect.forEach with the concurrency; under `tracer`
 * when given, installed once around the run.
 */
const effectPool = <R>(
  layer: Layer.Layer<R, unknown>,
  setup: Effect.Effect<Effect.Effect<unknown, unknown, R>, unknown, R>,
  calls: number,
  concurrency: number,
  warmup: number,
  latencies: Array<number>,
  measure: <A>(run: () => Promise<A>) => Promise<A>,
  tracer?: Tracer.Tracer
) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(layer)
    const call = yield* Effect.provide(setup, context)
    const timed = Effect.suspend(() => {
      const started = performance.now()
      return Effect.map(call, () => latencies.push(performance.now() - started))
    })
    // The same pool as the promise clients: `concurrency` workers, each making calls one after
    // another until `n` are done (no fiber forked per call).
    const run = (n: number) => {
      let next = 0
      const worker = Effect.whileLoop({
        while: () => next < n,
        body: () => Effect.suspend(() => (next++, timed)),
        step: () => {}
      })
      const workers = Effect.provide(
        Effect.forEach(Array.from({ length: Math.min(concurrency, n) }), () => worker, {
          concurrency,
          discard: true
        }),
        context
      )
      return Effect.runPromise(tracer === undefined ? workers : Effect.withTracer(workers, tracer))
    }
    yield* Effect.promise(() => run(warmup))
    latencies.length = 0
    yield* Effect.promise(() => measure(() => run(calls)))
  })))

/**
 * The same two calls by hand through @effect/platform's HttpClient (over undici, or fetch);
 * `untraced`: with the platform's own span turned off, as `HttpTransport.layerHttpClient` runs it.
 */
const platformSetup = (baseUrl: string, untraced = false) =>
  Effect.gen(function*() {
    const platform = yield* HttpClient.HttpClient
    const client = untraced ? HttpClient.withTracerDisabledWhen(platform, () => true) : platform
    const token = yield* client.execute(
      HttpClientRequest.post(`${baseUrl}/api/Server/Token`).pipe(
        HttpClientRequest.bodyUnsafeJson({ ApplicationId: APPLICATION_ID })
      )
    ).pipe(Effect.flatMap((response) => response.json))
    const authorization = `Bearer ${(token as { Token: string }).Token}`
    const url = `${baseUrl}/api/clinical/medication/get`
    return Effect.flatMap(
      client.execute(
        HttpClientRequest.post(url).pipe(
          HttpClientRequest.setHeaders({ authorization, applicationid: APPLICATION_ID }),
          HttpClientRequest.bodyUnsafeJson({ personuid: PERSON_UID })
        )
      ),
      (response) => response.json
    )
  })

const libraryLayer = (baseUrl: string, transport: "undici" | "fetch" | "undici-proxied", concurrency: number) => {
  const options = { baseUrl, applicationId: APPLICATION_ID, ...librarySettings(concurrency) }
  return transport === "undici-proxied"
    ? ClinicalClient.layerUndici({ ...options, proxy: process.env.BENCH_PROXY! })
    : transport === "undici"
    ? ClinicalClient.layerUndici({ ...options, proxy: false })
    : ClinicalClient.layer(options).pipe(
      Layer.provide(HttpTransport.layerHttpClient),
      Layer.provide(FetchHttpClient.layer)
    )
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

const heapUsed = () => {
  for (let i = 0; i < 3; i++) globalThis.gc?.()
  return process.memoryUsage().heapUsed
}

export const measure = async (
  kind: Kind,
  baseUrl: string,
  calls: number,
  concurrency: number
): Promise<Measurement> => {
  const latencies: Array<number> = []
  const warmup = Math.max(500, Math.floor(calls / 10))
  let cpu = 0
  let wall = 0
  let heapDelta = 0
  let gcMillis = 0
  const timed = async <A>(run: () => Promise<A>) => {
    const heapBefore = heapUsed()
    // BENCH_CPU_PROFILE=file: a CPU profile of the timed calls only (no start-up, no warm-up).
    const profile = process.env["BENCH_CPU_PROFILE"] === undefined ? undefined : new Session()
    if (profile !== undefined) {
      profile.connect()
      await profile.post("Profiler.enable")
      await profile.post("Profiler.start")
    }
    // Collections during the calls only: the forced ones around them are left out.
    const gc = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gcMillis += entry.duration
    })
    const cpuBefore = process.cpuUsage()
    const started = performance.now()
    gc.observe({ entryTypes: ["gc"] })
    const result = await run()
    wall = performance.now() - started
    const used = process.cpuUsage(cpuBefore)
    cpu = used.user + used.system
    gc.takeRecords().forEach((entry) => (gcMillis += entry.duration))
    gc.disconnect()
    if (profile !== undefined) {
      const { profile: taken } = await profile.post("Profiler.stop")
      Fs.writeFileSync(process.env["BENCH_CPU_PROFILE"]!, JSON.stringify(taken))
      profile.disconnect()
    }
    heapDelta = heapUsed() - heapBefore
    return result
  }
  if (kind === "raw-undici" || kind === "fetch" || kind === "plain-dispatch") {
    const caller = kind === "raw-undici"
      ? await rawUndici(baseUrl)
      : kind === "plain-dispatch"
      ? await plainDispatch(baseUrl)
      : await rawFetch(baseUrl)
    await promisePool(warmup, concurrency, caller.call, latencies)
    latencies.length = 0
    await timed(() => promisePool(calls, concurrency, caller.call, latencies))
    await caller.close()
  } else if (kind === "platform-httpclient" || kind === "platform-fetch" || kind === "platform-fetch-untraced") {
    const platform = kind === "platform-httpclient" ? NodeHttpClient.layerUndici : FetchHttpClient.layer
    const setup = platformSetup(baseUrl, kind === "platform-fetch-untraced")
    await effectPool(platform, setup, calls, concurrency, warmup, latencies, timed)
  } else if (kind === "transport-only" || kind === "adapter-fetch" || kind === "effect-floor") {
    const setup = Effect.gen(function*() {
      const transport = yield* HttpTransport.HttpTransport
      const tokenResponse = yield* transport.send({
        method: "POST",
        url: `${baseUrl}/api/Server/Token`,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ApplicationId: APPLICATION_ID })
      })
      const authorization = `Bearer ${JSON.parse(tokenResponse.body).Token}`
      const url = `${baseUrl}/api/clinical/medication/get`
      const call = Effect.suspend(() =>
        transport.send({
          method: "POST",
          url,
          headers: { "content-type": "application/json", authorization, applicationid: APPLICATION_ID },
          body: JSON.stringify({ personuid: PERSON_UID }),
          // As the library sends every data request: with a timeout and a body limit.
          timeoutMillis: 30_000,
          maxResponseBytes: 4 * 1024 * 1024
        })
      ).pipe(Effect.map((response) => JSON.parse(response.body)))
      return kind === "effect-floor" ? Effect.promise(() => Promise.resolve(1)) : call
    })
    // adapter-fetch is HttpTransport.layerHttpClient alone over the FetchHttpClient that
    // platform-fetch drives by hand: the difference between the two rows is the adapter's cost.
    const transport = kind === "adapter-fetch"
      ? HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))
      : HttpTransport.layerUndici()
    await effectPool(transport, setup, calls, concurrency, warmup, latencies, timed)
  } else {
    const layer = libraryLayer(
      baseUrl,
      kind === "library-fetch" ? "fetch" : kind === "library-undici-proxied" ? "undici-proxied" : "undici",
      concurrency
    )
    await effectPool(
      layer,
      Effect.succeed(MedicationService.get(PERSON_UID)),
      calls,
      concurrency,
      warmup,
      latencies,
      timed,
      kind === "library-undici-traced" ? installedTracer : undefined
    )
  }
  const sorted = latencies.sort((a, b) => a - b)
  return {
    kind,
    concurrency,
    calls,
    cpuMicrosPerCall: cpu / calls,
    callsPerSecond: calls / (wall / 1000),
    p50Millis: percentile(sorted, 0.5),
    p99Millis: percentile(sorted, 0.99),
    heapDeltaBytes: heapDelta,
    gcMicrosPerCall: (gcMillis * 1000) / calls
  }
}

if (process.argv[1]?.endsWith("client.ts")) {
  const [kind, baseUrl, calls, concurrency] = process.argv.slice(2)
  if (![...KINDS, ...DIAGNOSTIC_KINDS].includes(kind as Kind)) throw new Error(`unknown kind ${kind}`)
  measure(kind as Kind, baseUrl!, Number(calls), Number(concurrency)).then(
    (result) => console.log(JSON.stringify(result)),
    (error) => {
      console.error(error)
      process.exitCode = 1
    }
  )
}
