// What docs/durable-execution.md's blocks assume (test/docs/doc-examples.ts).
// billing and mail are real stand-ins: test/docs/examples.test.ts runs the trial job with them.
import type { Conveyor, DurableFunctions } from "conveyor-jobs";

/** Every mail the trial job sent: [to, template]. */
export const sentMail: Array<[string, string]> = [];
export const billing = { createAccount: async (email: string) => ({ id: "acct_1", email }) };
export const mail = {
  send: async (to: string, template: string): Promise<void> => {
    sentMail.push([to, template]);
  },
};

export declare const conveyor: Conveyor;
export declare const accountId: string;
export declare const step: DurableFunctions["step"];
export declare const stripe: { charge(order: { id: string; amountCents: number }): Promise<{ id: string }> };
export declare const order: { id: string; amountCents: number };
