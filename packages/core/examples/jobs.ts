import { sendEmail } from "./email.js";
import { summarizeText } from "./summarize.js";
import { deliverWebhook } from "./webhook.js";

/** The example jobs module: `conveyor worker --jobs dist/examples/jobs.js`. */
export default [sendEmail, summarizeText, deliverWebhook];
