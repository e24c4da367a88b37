/**
 * effect-clinical/promise's AbortSignal per call and `close()`: an abort mid-request or before it,
 * a program that closes its client exiting by itself, calls after close rejecting with ClientClosed.
 */
import { Effect, Exit, Scope } from "effect"
import { ClientClosed, createClinicalClient } from "effect-clinical/promise"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import * as Hostile from "./support/HostileServer.js"
import { clientFor, closeStartedAfterEach, rejection, started, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("AbortSignal", () => {
  it("aborting mid-request rejects with the signal's reason and closes the socket", async () => {
    const scope = Effect.runSync(Scope.make())
    started.push({ close: () => Effect.runPromise(Scope.close(scope, Exit.void)) })
    const server = await Effect.runPromise(Scope.extend(Hostile.serve(Hostile.withToken(() => {})), scope))
    const clinical = clientFor(server.url, Hostile.APPLICATION_ID, { requestTimeout: "30 seconds" })
    const controller = new AbortController()
    const call = clinical.medications(Hostile.PERSON_UID, { signal: controller.signal })
    while (server.received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(server.abandoned()).toBe(1)
    const reason = new Error("the user went away")
    controller.abort(reason)
    expect(await rejection(call)).toBe(reason)
    await Effect.runPromise(server.drained.pipe(Effect.timeout("2 seconds")))
  })

  it("an already aborted signal rejects at once and sends nothing", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const controller = new AbortController()
    controller.abort()
    const error = await rejection(clinical.medications(mock.persons[0]!.personUid, { signal: controller.signal }))
    expect((error as Error).name).toBe("AbortError")
    expect((await mock.counters()).dataRequests).toBe(0)
  })
})

describe("close", () => {
  it("a program that closes its client exits by itself, with nothing left running", async () => {
    const mock = await startMock()
    // The package as built, in a process of its own: no process.exit, so it ends only when
    // nothing of the client (sockets, timers, fibers) is left holding the event loop.
    const program = `
      import { createClinicalClient } from ${
      JSON.stringify(Path.resolve(import.meta.dirname, "../dist/src/promise.js"))
    }
      const clinical = createClinicalClient({ baseUrl: process.env.URL, applicationId: process.env.APPLICATION_ID })
      const { medications } = await clinical.medications(process.env.PERSON_UID)
      console.log(medications.length)
      await clinical.close()
    `
    // A child that does not end by itself is killed at the timeout, and its exit code is then null.
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", program], {
        env: {
          ...process.env,
          URL: mock.url,
          APPLICATION_ID: mock.applicationId,
          PERSON_UID: mock.persons[0]!.personUid
        },
        timeout: 20_000
      }, (_, stdout) => resolve({ code: child.exitCode, stdout }))
    })
    expect(code).toBe(0)
    expect(stdout.trim()).toBe(String(mock.persons[0]!.medications.length))
    // A whole process start: 1 s alone, over 5 on a machine busy with other test files.
  }, 30_000)

  it("calls after close reject with ClientClosed; close twice is fine", async () => {
    const mock = await startMock()
    const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    await clinical.medications(mock.persons[0]!.personUid)
    await clinical.close()
    await clinical[Symbol.asyncDispose]()
    const error = await rejection(clinical.medications(mock.persons[0]!.personUid))
    expect(error).toBeInstanceOf(ClientClosed)
    expect((error as Error).message).toContain("the client is closed")
  })
})
