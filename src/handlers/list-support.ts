// Paging lists that are assembled in memory (built-ins merged with stored rows, tool catalogs), with the same
// ordering rules as keyset pages in SQL: by a sort value, then by id; `after` is the last key of the previous page.
export function pageInMemory<T>(items: T[], key: (t: T) => [string, string], order: 'asc' | 'desc', after: readonly [unknown, string] | null, limit: number): T[] {
  const sign = order === 'asc' ? 1 : -1;
  const cmp = (a: [string, string], b: readonly [unknown, string]) => {
    const av = a[0];
    const bv = String(b[0]);
    return sign * (av < bv ? -1 : av > bv ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
  };
  const sorted = items.slice().sort((x, y) => cmp(key(x), key(y)));
  return (after ? sorted.filter((t) => cmp(key(t), after) > 0) : sorted).slice(0, limit + 1);
}
