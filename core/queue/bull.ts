/**
 * What the queue uses of BullMQ, as ports: the application brings its own BullMQ (a peer of each
 * line), and each line hands the core its classes. Structural, so that either line's copy of BullMQ
 * fits (two copies' classes never match as types).
 */
import type { IoredisClient } from "./queueSettings.js"

/** The job states the queue counts. */
export type State = "waiting" | "active" | "delayed" | "failed" | "prioritized"

/** What the queue reads and does of one of BullMQ's jobs. */
export interface BullJob {
  readonly id?: string | undefined
  readonly data: unknown
  readonly opts: { readonly attempts?: number | undefined }
  readonly attemptsMade: number
  /** When it was added, and when its current attempt started (ms since the epoch). */
  readonly timestamp: number
  readonly processedOn?: number | undefined
  readonly failedReason: string
  retry(state: "failed", opts: { resetAttemptsMade: boolean; resetAttemptsStarted: boolean }): Promise<void>
  /** Back to waiting, from this worker's hands (`token`: its lock), no attempt counted (thrown `WaitingError` after). */
  moveToWait(token: string): Promise<unknown>
}

/** What the queue uses of BullMQ's `Queue`. */
export interface BullQueue {
  getJobCounts(...states: Array<State>): Promise<{ [state: string]: number }>
  getFailed(start: number, end: number): Promise<Array<{ readonly failedReason: string }>>
  getJob(id: string): Promise<BullJob | undefined>
  addBulk(
    jobs: Array<{ name: string; data: unknown; opts: Record<string, unknown> & { jobId: string } }>
  ): Promise<unknown>
  getWaitingCount(): Promise<number>
  isPaused(): Promise<boolean>
  pause(): Promise<void>
  resume(): Promise<void>
  rateLimit(millis: number): Promise<void>
  getRateLimitTtl(maxJobs?: number): Promise<number>
  setGlobalConcurrency(concurrency: number): Promise<unknown>
  setGlobalRateLimit(max: number, duration: number): Promise<unknown>
  close(): Promise<void>
  on(event: "error", listener: (error: Error) => void): unknown
}

/** What the queue uses of BullMQ's `Worker`. */
export interface BullWorker {
  on(event: "error", listener: (error: Error) => void): unknown
  /** A job this worker's check found stalled (its worker stopped renewing its lock), put back to wait. */
  on(event: "stalled", listener: (jobId: string) => void): unknown
  close(): Promise<void>
  cancelAllJobs(reason?: string): void
  /** Stops taking jobs (`true`: without waiting for the ones in hand). */
  pause(doNotWaitActive?: boolean): Promise<void>
}

/** BullMQ's processor: the job, the lock's token, and the signal BullMQ aborts on `cancelAllJobs`. */
export type Processor = (job: any, token?: string, signal?: AbortSignal) => Promise<null>

/** BullMQ's classes the queue needs, as a line hands them over (`import { Queue, ... } from "bullmq"`). */
export interface Bull<Q extends BullQueue = BullQueue, W extends BullWorker = BullWorker> {
  readonly Queue: new(name: string, options: {
    connection: any
    prefix: string
    streams: { events: { maxLen: number } }
  }) => Q
  readonly Worker: new(name: string, processor: Processor, options: {
    connection: any
    prefix: string
    concurrency: number
    limiter: { max: number; duration: number }
    lockDuration: number
    stalledInterval: number
    maxStalledCount: number
    metrics: { maxDataPoints: number }
  }) => W
  readonly UnrecoverableError: new(message?: string) => Error
  readonly RateLimitError: new(message?: string) => Error
  /** Thrown by a processor that moved its job back to waiting itself: BullMQ counts no attempt. */
  readonly WaitingError: new(message?: string) => Error
}

/** The connection as BullMQ's options take it (an ioredis client; its own type is the line's BullMQ's). */
export const connectionOf = (connection: IoredisClient): any => connection
