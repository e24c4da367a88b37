/**
 * Sealing keys for tests: 32 bytes that look random (a SHA-256), one per number, the same on every
 * run. A key of one byte repeated is refused as too weak.
 */
import { createHash } from "node:crypto"

/** Sealing key number `n`: 32 bytes. */
export const sealingKey = (n: number): Buffer => createHash("sha256").update(`effect-clinical test key ${n}`).digest()
