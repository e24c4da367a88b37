/** The queue's runs in Redis: the core's (core/queue/runStore.ts). */
export * from "../../../core/queue/runStore.js"
