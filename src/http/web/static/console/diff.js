// What changed between two workflow states (two deployment versions): blocks added, removed and changed (with
// each changed setting's old and new value) and edges added and removed. Blocks are matched by id; edges by what
// they connect (source, handle, target), since an edge's own id may differ between versions. Positions and sizes
// are layout, not behaviour, and are left out.

const LAYOUT = new Set(['position', 'height', 'width', 'layout']);

/** The settings of a block that a diff compares, as flat `name → value` pairs. */
function settings(b) {
  const out = { name: b.name, type: b.type, enabled: b.enabled !== false };
  for (const [k, v] of Object.entries(b.data ?? {})) if (!LAYOUT.has(k)) out[`data.${k}`] = v;
  for (const [k, v] of Object.entries(b.subBlocks ?? {})) out[k] = v?.value;
  for (const k of ['advancedMode', 'triggerMode', 'locked']) if (b[k] !== undefined) out[k] = b[k];
  return out;
}

const same = (a, b) => stable(a) === stable(b);
function stable(v) {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stable(v[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

const edgeKey = (e) => `${e.source}\u0000${e.sourceHandle ?? 'source'}\u0000${e.target}\u0000${e.targetHandle ?? 'target'}`;

/**
 * The difference from state `a` to state `b`: `{ addedBlocks, removedBlocks, changedBlocks: [{ block, changes:
 * [{ setting, before, after }] }], addedEdges, removedEdges }`; each edge carries the names of its ends.
 */
export function diffStates(a, b) {
  const A = a.blocks ?? {};
  const B = b.blocks ?? {};
  const name = (id) => B[id]?.name ?? A[id]?.name ?? id;
  const addedBlocks = Object.values(B).filter((x) => !A[x.id]);
  const removedBlocks = Object.values(A).filter((x) => !B[x.id]);
  const changedBlocks = [];
  for (const x of Object.values(B)) {
    if (!A[x.id]) continue;
    const before = settings(A[x.id]);
    const after = settings(x);
    const changes = [...new Set([...Object.keys(before), ...Object.keys(after)])]
      .filter((k) => !same(before[k], after[k]))
      .map((setting) => ({ setting, before: before[setting], after: after[setting] }));
    if (changes.length) changedBlocks.push({ block: x, changes });
  }
  const ea = new Map((a.edges ?? []).map((e) => [edgeKey(e), e]));
  const eb = new Map((b.edges ?? []).map((e) => [edgeKey(e), e]));
  const described = (e) => ({ ...e, sourceName: name(e.source), targetName: name(e.target) });
  return {
    addedBlocks,
    removedBlocks,
    changedBlocks,
    addedEdges: [...eb].filter(([k]) => !ea.has(k)).map(([, e]) => described(e)),
    removedEdges: [...ea].filter(([k]) => !eb.has(k)).map(([, e]) => described(e)),
  };
}
