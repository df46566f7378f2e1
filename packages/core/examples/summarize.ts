import { z } from "zod";
import { defineJob } from "conveyor-jobs";

/**
 * Summarise a text: word and sentence counts, reading time and the most
 * frequent words. CPU-only work that needs no network; the result is kept
 * on the job (`job.result`), and progress is reported as words are counted
 * (`job.progress`; the writes are coalesced, so reporting often is cheap).
 */
export const summarizeText = defineJob({
  kind: "text.summarize",
  schema: z.object({ text: z.string().min(1).max(1_000_000), top: z.number().int().min(1).max(50).default(5) }),
  async handler({ payload, signal, progress }) {
    const words = payload.text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
    const counts = new Map<string, number>();
    for (const [index, word] of words.entries()) {
      // Long texts: stay responsive to cancellation, and say how far we are.
      if (index % 10_000 === 0) {
        signal.throwIfAborted();
        void progress({ counted: index, of: words.length });
      }
      if (word.length > 3) counts.set(word, (counts.get(word) ?? 0) + 1);
    }
    const topWords = [...counts.entries()]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, payload.top)
      .map(([word, count]) => ({ word, count }));
    void progress({ counted: words.length, of: words.length });
    const sentences = payload.text.split(/[.!?]+\s/).filter((s) => s.trim().length > 0).length;
    return { words: words.length, sentences, readingMinutes: Math.ceil(words.length / 230), topWords };
  },
});
