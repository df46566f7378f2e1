import { fileURLToPath } from "node:url";

/** The bundled example jobs module (built to dist/examples/jobs.js): what `conveyor dev` runs. */
export const EXAMPLE_JOBS = fileURLToPath(new URL("../../examples/jobs.js", import.meta.url));
