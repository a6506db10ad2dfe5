// Draws a workflow's graph as SVG: blocks as boxes, loops and parallels as containers around their blocks, edges
// as curves, disabled blocks dashed and labelled. Saved positions are used when the blocks have distinct ones;
// otherwise a layered layout (longest path from the sources, one column per layer) places them, container by
// container from the inside out.
import { el, svg } from './core.js';

const BLOCK_W = 180;
const BLOCK_H = 56;
const GAP_X = 70;
const GAP_Y = 28;
const PAD = 24;
const HEADER = 28;
const CONTAINER_TYPES = new Set(['loop', 'parallel']);

const parentOf = (b) => b?.data?.parentId ?? null;

/** Layer index of each id: the longest path to it from a node with no incoming edge (cycles are cut). */
function layers(ids, edges) {
  const incoming = new Map(ids.map((id) => [id, []]));
  for (const e of edges) if (incoming.has(e.source) && incoming.has(e.target) && e.source !== e.target) incoming.get(e.target).push(e.source);
  const depth = new Map();
  const visiting = new Set();
  const visit = (id) => {
    if (depth.has(id)) return depth.get(id);
    if (visiting.has(id)) return 0;
    visiting.add(id);
    let d = 0;
    for (const s of incoming.get(id)) d = Math.max(d, visit(s) + 1);
    visiting.delete(id);
    depth.set(id, d);
    return d;
  };
  for (const id of ids) visit(id);
  return depth;
}

/** Positions (relative to the container) and sizes of `ids`, whose own sizes are in `size`. */
function layeredLayout(ids, edges, size) {
  const depth = layers(ids, edges);
  const columns = [];
  for (const id of ids) (columns[depth.get(id)] ??= []).push(id);
  const pos = new Map();
  let x = 0;
  for (const col of columns.filter(Boolean)) {
    let y = 0;
    let width = 0;
    for (const id of col) {
      pos.set(id, { x, y });
      y += size.get(id).h + GAP_Y;
      width = Math.max(width, size.get(id).w);
    }
    x += width + GAP_X;
  }
  return pos;
}

/** Whether the saved positions can be used: every block has one and no two blocks of a container share it. */
function positionsUsable(blocks) {
  const seen = new Set();
  for (const b of blocks) {
    const p = b.position;
    if (!p || typeof p.x !== 'number' || typeof p.y !== 'number') return false;
    const key = `${parentOf(b)}:${Math.round(p.x)}:${Math.round(p.y)}`;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/** Absolute boxes of every block: { id → {x, y, w, h} }. */
export function layout(state) {
  const blocks = Object.values(state.blocks ?? {});
  const byId = new Map(blocks.map((b) => [b.id, b]));
  const children = new Map();
  for (const b of blocks) {
    const p = byId.has(parentOf(b)) ? parentOf(b) : null;
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(b.id);
  }
  const edges = state.edges ?? [];
  const auto = !positionsUsable(blocks);
  const size = new Map();
  const rel = new Map();

  // Inside out: a container's size follows from its children's layout.
  const place = (parent) => {
    const ids = children.get(parent) ?? [];
    for (const id of ids) {
      if (children.has(id)) place(id);
      if (!size.has(id)) size.set(id, { w: BLOCK_W, h: BLOCK_H });
    }
    const pos = auto ? layeredLayout(ids, edges, size) : new Map(ids.map((id) => [id, { x: byId.get(id).position.x, y: byId.get(id).position.y }]));
    if (!auto && ids.length) {
      // Saved child positions may be negative or offset; normalise so the container wraps them.
      const minX = Math.min(...ids.map((id) => pos.get(id).x));
      const minY = Math.min(...ids.map((id) => pos.get(id).y));
      for (const id of ids) pos.set(id, { x: pos.get(id).x - minX, y: pos.get(id).y - minY });
    }
    for (const id of ids) rel.set(id, pos.get(id));
    if (parent !== null) {
      const w = Math.max(BLOCK_W + 2 * PAD, ...ids.map((id) => rel.get(id).x + size.get(id).w + 2 * PAD));
      const h = Math.max(BLOCK_H + HEADER + PAD, ...ids.map((id) => rel.get(id).y + size.get(id).h + HEADER + 2 * PAD));
      size.set(parent, { w, h });
    }
  };
  place(null);
  const boxes = new Map();
  const absolute = (parent, ox, oy) => {
    for (const id of children.get(parent) ?? []) {
      const r = rel.get(id);
      const box = { x: ox + r.x, y: oy + r.y, ...size.get(id) };
      boxes.set(id, box);
      if (children.has(id)) absolute(id, box.x + PAD, box.y + HEADER + PAD);
    }
  };
  absolute(null, PAD, PAD);
  return { boxes, auto, children };
}

/**
 * The graph as an SVG element plus a block list for screen readers and keyboards. `onSelect(block)` is called
 * when a block is chosen (click, or Enter on the focused block).
 */
export function drawGraph(state, onSelect) {
  const { boxes, auto } = layout(state);
  const blocks = Object.values(state.blocks ?? {});
  const byId = new Map(blocks.map((b) => [b.id, b]));
  const all = [...boxes.values()];
  const width = Math.max(320, ...all.map((b) => b.x + b.w + PAD));
  const height = Math.max(120, ...all.map((b) => b.y + b.h + PAD));
  const root = svg('svg', { class: 'graph', viewBox: `0 0 ${width} ${height}`, width, height, role: 'group', 'aria-label': `Workflow graph: ${blocks.length} blocks, ${(state.edges ?? []).length} connections${auto ? ', laid out automatically' : ''}` });
  root.append(
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))),
  );
  const containers = svg('g', { class: 'containers' });
  const edgeLayer = svg('g', { class: 'edges' });
  const nodes = svg('g', { class: 'nodes' });
  root.append(containers, edgeLayer, nodes);

  // Containers first (outermost drawn first, so inner ones sit on top).
  const depthOf = (b) => {
    let d = 0;
    for (let p = parentOf(b); p && byId.has(p) && d < 20; p = parentOf(byId.get(p))) d++;
    return d;
  };
  const ordered = [...blocks].sort((a, b) => depthOf(a) - depthOf(b));
  for (const b of ordered) {
    const box = boxes.get(b.id);
    if (!box) continue;
    const isContainer = CONTAINER_TYPES.has(b.type);
    const classes = ['block', `type-${b.type}`, isContainer ? 'container' : '', b.enabled === false ? 'disabled' : ''].filter(Boolean).join(' ');
    const label = `${b.name} (${b.type}${b.enabled === false ? ', disabled' : ''})`;
    // The accessible name comes from the visible text (name and type), as axe's label-in-name rule wants.
    const g = svg('g', { class: classes, 'data-block-id': b.id, 'data-block-name': b.name, tabindex: 0, role: 'button' });
    g.append(svg('desc', {}, label), svg('rect', { x: box.x, y: box.y, width: box.w, height: box.h, rx: isContainer ? 14 : 10 }));
    const ty = isContainer ? box.y + 19 : box.y + 24;
    g.append(svg('text', { x: box.x + 12, y: ty, class: 'name' }, truncate(b.name, isContainer ? 40 : 22)));
    g.append(svg('text', { x: box.x + 12, y: isContainer ? ty : box.y + 43, class: 'kind', 'text-anchor': isContainer ? 'end' : 'start', dx: isContainer ? box.w - 24 : 0 }, b.enabled === false ? `${b.type} · disabled` : b.type));
    const select = () => onSelect?.(b);
    g.addEventListener('click', select);
    g.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        select();
      }
    });
    (isContainer ? containers : nodes).append(g);
  }

  for (const e of state.edges ?? []) {
    const s = boxes.get(e.source);
    const t = boxes.get(e.target);
    if (!s || !t) continue;
    const intoContainer = parentOf(byId.get(e.target)) === e.source;
    const x1 = intoContainer ? s.x + 6 : s.x + s.w;
    const y1 = intoContainer ? s.y + HEADER / 2 + 6 : s.y + s.h / 2;
    const x2 = t.x;
    const y2 = t.y + t.h / 2;
    const dx = Math.max(30, Math.abs(x2 - x1) / 2);
    const handle = e.sourceHandle && e.sourceHandle !== 'source' ? e.sourceHandle : '';
    edgeLayer.append(
      svg('path', { d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`, class: `edge${handle === 'error' ? ' edge-error' : ''}`, 'marker-end': 'url(#arrow)', 'data-source': e.source, 'data-target': e.target }, svg('title', {}, `${byId.get(e.source)?.name} → ${byId.get(e.target)?.name}${handle ? ` (${handle})` : ''}`)),
    );
  }
  return el('div', { class: 'graph-wrap' }, root);
}

const truncate = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
