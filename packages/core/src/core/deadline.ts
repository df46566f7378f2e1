/** True when `work` settles (either way) within `ms`; false when the time runs out first. `work` goes on; its outcome is not waited for. */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(
      () => true,
      () => true,
    ), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
