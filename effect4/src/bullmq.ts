/**
 * effect-clinical/bullmq on Effect 4: bulk reads spread over any number of processes and machines,
 * on BullMQ (an optional peer: `npm install bullmq@^6.7 ioredis@^5`). A separate entry point, so
 * that the main one never loads BullMQ. See docs/distributed.md.
 *
 * `import { ClinicalQueue } from "effect-clinical/bullmq"`, as the main entry's modules are
 * imported; `import * as ClinicalQueue from "effect-clinical/bullmq"` reads the same names.
 */
// First: below the line's Node.js floor, importing it throws one clear error (see nodeFloor).
import "./internal/nodeFloor.js"

/** Enqueue persons as sealed jobs, work them from any number of processes, watch and resume the queue. */
export * as ClinicalQueue from "./ClinicalQueue.js"
export * from "./ClinicalQueue.js"
