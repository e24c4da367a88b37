/**
 * What the Promise*.test.ts files share: mocks and clients started by a test and closed after it
 * (`closeStartedAfterEach` registers the closing in each file), and the rejection of a promise that
 * must reject.
 */
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { afterEach } from "vitest"

/** What the running test started, closed once it ends. */
export const started: Array<{ close: () => Promise<void> }> = []

/** Closes, after each test of the file, what it started. */
export const closeStartedAfterEach = (): void => {
  afterEach(async () => {
    for (const resource of started.splice(0)) await resource.close()
  })
}

export const startMock = async (options?: MockClinicalServer.Options) => {
  const mock = await MockClinicalServer.start(options)
  started.push(mock)
  return mock
}

export const clientFor = (url: string, applicationId: string, extra: object = {}) => {
  const client = createClinicalClient({ baseUrl: url, applicationId, maxRetries: 0, ...extra })
  started.push(client)
  return client
}

/** The rejection of a promise that must reject. */
export const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}
