// A run's block events as they come (from the execute call's SSE stream or from following a run): one line a
// block, "running" until it ends, then done or failed with its time.
import { duration, el } from './core.js';

/** The list and `show(frame)`, which draws one SSE frame (`{event, blockId, blockName, …}`) into it. */
export function blockEvents() {
  const list = el('ol', { class: 'events', 'aria-live': 'polite', 'aria-label': 'Block events' });
  const show = (f) => {
    const label = (f.blockName ?? 'Block') + (f.iteration?.length ? ` [${f.iteration.join('.')}]` : '');
    const key = `${f.blockId ?? ''}:${(f.iteration ?? []).join('.')}`;
    if (f.event === 'block_started') list.append(el('li', { class: 'running', dataset: { block: key }, text: `${label}: running` }));
    else if (f.event === 'block_completed' || f.event === 'block_failed' || f.event === 'block_skipped') {
      const failed = f.event === 'block_failed';
      const skipped = f.event === 'block_skipped';
      const li = [...list.children].reverse().find((x) => x.dataset.block === key && x.classList.contains('running'));
      const text = `${label}: ${failed ? `failed${f.error?.message ? ` (${f.error.message})` : ''}` : skipped ? 'skipped' : 'done'}${typeof f.durationMs === 'number' ? ` in ${duration(f.durationMs)}` : ''}`;
      if (li) {
        li.className = failed ? 'failed' : 'done';
        li.textContent = text;
      } else list.append(el('li', { class: failed ? 'failed' : 'done', dataset: { block: key }, text }));
    }
  };
  return { list, show };
}
