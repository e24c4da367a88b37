/** docs/observability.md's Promise logging snippet, run: its region is copied into the page. */
import { createClinicalClient } from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { expect, it } from "vitest"

it("routes the client's log lines to the application's logger (pino-like)", async () => {
  const mock = await MockClinicalServer.start()
  const lines: Array<readonly [string, Record<string, unknown>, string]> = []
  const logger = {
    debug: (fields: Record<string, unknown>, message: string) => lines.push(["debug", fields, message]),
    info: (fields: Record<string, unknown>, message: string) => lines.push(["info", fields, message]),
    warn: (fields: Record<string, unknown>, message: string) => lines.push(["warn", fields, message]),
    error: (fields: Record<string, unknown>, message: string) => lines.push(["error", fields, message])
  }
  const { applicationId, url: baseUrl } = mock
  // #region promise-logging
  const clinical = createClinicalClient({
    baseUrl,
    applicationId,
    logLevel: "debug", // with a logger, default "info": only the library's warnings
    logger: ({ annotations, level, message }) => logger[level]({ ...annotations, lib: "effect-clinical" }, message)
  })
  // #endregion
  try {
    await clinical.medications(mock.persons[0]!.personUid)
    expect(lines).toEqual([[
      "debug",
      expect.objectContaining({ generation: 1, lib: "effect-clinical" }),
      "token issued"
    ]])
  } finally {
    await clinical.close()
    await mock.close()
  }
})
