/**
 * The benchmarks' baseline: the two calls by hand over undici (a token once, then POSTs with the
 * headers and a JSON body), over whichever undici the caller passes (the Effect 3 line's or the
 * Effect 4 line's: each measures against its own). Imports nothing, so either package compiles it.
 */

export const APPLICATION_ID = "5e0c2b8a-9d7f-4c1e-a3b6-0f2d4e6a8c10"
export const PERSON_UID = "q8Vf2m3Kx/1Zb+9TnP0aLwH7cR4sE6uJ2yG5iD8oQ1w="

/**
 * The library's settings in a measurement: as many requests in flight as the callers make, as raw
 * undici sends them, and the adaptive concurrency limit off unless BENCH_ADAPTIVE_CONCURRENCY=on
 * (the library's default). With it on, the limit finds that the one-process loopback server queues
 * requests long before 256 and lets fewer out: raw undici then sends 256 at once and the library
 * far fewer, and the client's loop takes one or two answers per turn instead of a burst (about
 * 10,000 returns to epoll in 22,000 calls against 140, under strace): another workload than raw's.
 */
export const librarySettings = (concurrency: number) => ({
  maxConcurrentRequests: Math.max(concurrency, 1),
  adaptiveConcurrency: process.env.BENCH_ADAPTIVE_CONCURRENCY === "on"
})

/** A call that resolves when one medication call is done; set up (token included) before timing. */
export interface Caller {
  readonly call: () => Promise<unknown>
  readonly close: () => Promise<void>
}

/** The parts of undici used here (`typeof import("undici")` of either major); `D` its `Agent`. */
export interface Undici<D extends { close(): Promise<void> }> {
  readonly Agent: new() => D
  readonly request: (
    url: string,
    options: { method: "POST"; dispatcher: D; headers: Record<string, string>; body: string }
  ) => Promise<{ readonly body: { json(): Promise<unknown> } }>
}

/** The two calls by hand over `undici`. */
export const rawUndiciOver = async <D extends { close(): Promise<void> }>(
  undici: Undici<D>,
  baseUrl: string
): Promise<Caller> => {
  const dispatcher = new undici.Agent()
  const tokenResponse = await undici.request(`${baseUrl}/api/Server/Token`, {
    method: "POST",
    dispatcher,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ApplicationId: APPLICATION_ID })
  })
  const { Token } = (await tokenResponse.body.json()) as { Token: string }
  const url = `${baseUrl}/api/clinical/medication/get`
  return {
    call: async () => {
      const response = await undici.request(url, {
        method: "POST",
        dispatcher,
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${Token}`,
          applicationid: APPLICATION_ID
        },
        body: JSON.stringify({ personuid: PERSON_UID })
      })
      return response.body.json()
    },
    close: () => dispatcher.close()
  }
}
