/** What a queue records of its runs: the core's (core/queue/runRecord.ts). */
export * from "../../../core/queue/runRecord.js"
