// placeholder replaced below
export interface WorkerOptions { concurrency?: number }
export class Worker { constructor(_c: unknown, _o: WorkerOptions) {} }
