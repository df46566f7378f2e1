// Pure, so the dashboard (in the browser) and the CLI draw a flow the same way.
/**
 * Each node's level in its flow: 0 for a node that waits on nothing in the
 * flow, else one more than the deepest node it waits on. Dependencies
 * outside the flow do not count. A flow has no cycle (enqueue refuses one);
 * a node caught in one anyway (rows edited by hand) is given the level after
 * every other.
 */
export function flowLevels(nodes: ReadonlyArray<{ node: string; dependsOn: ReadonlyArray<{ node: string | null }> }>): Map<string, number> {
  const levels = new Map<string, number>();
  let left = [...nodes];
  while (left.length > 0) {
    const next = left.filter((entry) => entry.dependsOn.some((dep) => dep.node !== null && dep.node !== entry.node && !levels.has(dep.node)));
    if (next.length === left.length) break;
    for (const entry of left) {
      if (next.includes(entry)) continue;
      const inFlow = entry.dependsOn.flatMap((dep) => (dep.node === null ? [] : [levels.get(dep.node) ?? 0]));
      levels.set(entry.node, inFlow.length === 0 ? 0 : Math.max(...inFlow) + 1);
    }
    left = next;
  }
  const deepest = Math.max(-1, ...levels.values());
  for (const entry of left) levels.set(entry.node, deepest + 1);
  return levels;
}
