/**
 * docs/distributed.md's worker without Effect: a Promise client, until SIGTERM, each result handed
 * to `save` (here a line on stdout, standing in for your database).
 *
 *   CLINICAL_BASE_URL=... CLINICAL_APPLICATION_ID=... CLINICAL_REDIS_URL=redis://127.0.0.1:6379 \
 *   CLINICAL_SEALING_KEY=<openssl rand -base64 32> node --import tsx examples/queue-worker-promise.ts
 */
// #region worker
import { PersonData } from "effect-clinical"
import { ClinicalQueue } from "effect-clinical/bullmq"
import { createClinicalClient } from "effect-clinical/promise"
import { Redis } from "ioredis"

// Your database: called once per person done, at least once (de-duplicate by index or jobId).
const save = async (index: number, items: ReadonlyArray<unknown>) => {
  console.log(`saved #${index}: ${items.length} item(s)`)
}

const connection = new Redis(process.env.CLINICAL_REDIS_URL!, { maxRetriesPerRequest: null })
// A 429 pauses every worker of the queue at once, rather than being retried here.
const clinical = createClinicalClient({
  baseUrl: process.env.CLINICAL_BASE_URL!,
  applicationId: process.env.CLINICAL_APPLICATION_ID!,
  retryRateLimited: false
})
const worker = await ClinicalQueue.createWorker(clinical, {
  connection,
  sealingKey: process.env.CLINICAL_SEALING_KEY,
  operation: PersonData.medications,
  sink: async (record) => {
    if (record.outcome === "Success") await save(record.index, record.result.items)
    else console.error(`#${record.index} failed: ${record.error._tag}`)
  }
})

// On SIGTERM: finish the jobs in hand, take no more, then leave.
process.once("SIGTERM", async () => {
  await worker.close()
  await clinical.close()
  await connection.quit()
})
// #endregion
