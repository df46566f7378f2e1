// Compiled in the packed app once conveyor-jobs-http and
// conveyor-jobs-embedded are installed beside the core (see
// packed-app.test.ts): their types load and check against the core's
// (Fastify's among them), with one copy of the core for all three.
import { Conveyor } from "conveyor-jobs";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "conveyor-jobs-embedded";
import { buildApp, type ConveyorApp, startApiServer } from "conveyor-jobs-http";

export const entryPoints: [(conveyor: Conveyor) => Promise<ConveyorApp>, () => Promise<EmbeddedPostgres>] = [
  (conveyor) => buildApp(conveyor),
  () => startEmbeddedPostgres(),
];

export async function serve(connectionString: string): Promise<string> {
  const conveyor = new Conveyor({ connectionString });
  // @ts-expect-error the port is a number
  await startApiServer(conveyor, { port: "8080" });
  const server = await startApiServer(conveyor, { port: 0 });
  await server.close();
  return server.url;
}
