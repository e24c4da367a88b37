/** docs/testing.md's test written without Effect: the mock served with `MockClinicalServer.start()`. */
// #region without-effect
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { afterAll, beforeAll, expect, it } from "vitest"

let mock: MockClinicalServer.Started
beforeAll(async () => {
  mock = await MockClinicalServer.start() // http://127.0.0.1:<free port>
})
afterAll(() => mock.close()) // closes every connection, drops delayed answers

it("reads a fixture person's medications, and a 503 is a ServerError", async () => {
  const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId, maxRetries: 0 })
  const person = mock.persons[0]!
  expect((await clinical.medications(person.personUid)).medications).toEqual(person.medications)
  await mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
  await expect(clinical.medications(person.personUid)).rejects.toMatchObject({ _tag: "ServerError" })
  expect((await mock.counters()).tokenRequests).toBe(1)
  await clinical.close()
})
// #endregion
