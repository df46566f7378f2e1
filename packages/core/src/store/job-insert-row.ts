import type { UniqueConflictMode, UniqueState } from "../core/unique.js";

// The row an enqueue hands the store. A module of its own, below the store's
// facade (job-store.ts) and the helpers the facade uses (rows.ts,
// copy-text.ts), so that those helpers need not import the facade back.

/** One row of `jobInsertMany`, columns already validated and encoded. */
export interface JobInsertRow {
  id: string;
  tenant: string;
  queue: string;
  kind: string;
  /** JSON text. */
  payload: string;
  priority: number;
  maxAttempts: number;
  runAt: Date | null;
  delayMs: number | null;
  idempotencyKey: string | null;
  /** The unique-key settings, resolved; null for an ordinary job. */
  unique: UniqueInsert | null;
  /** The W3C trace context to store (JSON text of a TraceContext, core/trace-context.ts); null or absent: none. */
  traceContext?: string | null;
  /** The key its limits per key count it under; absent or null: none. */
  limitKey?: string | null;
}

/** A unique key as `jobInsertUnique` takes it. */
export interface UniqueInsert {
  key: string;
  states: readonly UniqueState[];
  onConflict: UniqueConflictMode;
  /** A replacement also sets the priority (the caller gave one). */
  replacePriority: boolean;
}
