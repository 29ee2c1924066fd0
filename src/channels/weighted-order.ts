export interface Ranked {
  priority: number;
  weight: number;
}

/**
 * The order in which to try `items`: lower priority tiers first; within a tier a weighted random
 * permutation, so the first pick of a tier is item i with probability weight_i / sum(weights),
 * and the rest follow by the same rule (Efraimidis-Spirakis: sort by random^(1/weight)).
 */
export function weightedOrder<T extends Ranked>(items: readonly T[], random: () => number): T[] {
  return items
    .map((item) => ({ item, key: Math.pow(random(), 1 / item.weight) }))
    .sort((a, b) => a.item.priority - b.item.priority || b.key - a.key)
    .map(({ item }) => item);
}
