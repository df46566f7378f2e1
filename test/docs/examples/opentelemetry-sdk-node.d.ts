// The part of @opentelemetry/sdk-node that docs/tracing.md shows; the repository does not install it.
declare module "@opentelemetry/sdk-node" {
  export class NodeSDK {
    constructor(options: { serviceName?: string; traceExporter?: unknown });
    start(): void;
    shutdown(): Promise<void>;
  }
}
