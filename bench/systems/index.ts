import type { SystemModule, SystemName } from "./system.js";

/** Load one system's module (the worker child loads only its own, so its RSS is that library's). */
export async function loadSystem(name: SystemName): Promise<SystemModule> {
  switch (name) {
    case "conveyor":
      return import("./conveyor.js");
    case "graphile-worker":
      return import("./graphile-worker.js");
    case "pg-boss":
      return import("./pg-boss.js");
    case "bullmq":
      return import("./bullmq.js");
    case "bullmq-aof":
      return import("./bullmq-aof.js");
    case "bullmq-pg":
      return import("./bullmq-pg.js");
    case "dbos":
      return import("./dbos.js");
  }
}
