// The four text edits of Edit File Content, applied to a whole UTF-8 text. An anchor or search text that is
// not there is refused with a reason rather than silently doing nothing.

export type TextEdit =
  | { mode: 'search_replace'; search: string; content: string; replaceAll?: boolean }
  | { mode: 'replace_between'; beforeAnchor: string; afterAnchor: string; content: string; occurrence?: number }
  | { mode: 'insert_after'; anchor: string; content: string; occurrence?: number }
  | { mode: 'delete_between'; startAnchor: string; endAnchor: string; occurrence?: number };

export class EditError extends Error {}

function nth(text: string, needle: string, occurrence: number): number {
  let at = -1;
  for (let i = 0; i < occurrence; i++) {
    at = text.indexOf(needle, at + 1);
    if (at === -1) return -1;
  }
  return at;
}

export function applyEdit(text: string, edit: TextEdit): string {
  switch (edit.mode) {
    case 'search_replace': {
      const count = text.split(edit.search).length - 1;
      if (count === 0) throw new EditError('The search text does not occur in the file.');
      if (count > 1 && !edit.replaceAll) throw new EditError(`The search text occurs ${count} times; make it unique or set replaceAll.`);
      return edit.replaceAll ? text.split(edit.search).join(edit.content) : text.replace(edit.search, () => edit.content);
    }
    case 'insert_after': {
      const at = nth(text, edit.anchor, edit.occurrence ?? 1);
      if (at === -1) throw new EditError('The anchor does not occur in the file (at that occurrence).');
      const cut = at + edit.anchor.length;
      return text.slice(0, cut) + edit.content + text.slice(cut);
    }
    case 'replace_between':
    case 'delete_between': {
      const [first, second] = edit.mode === 'replace_between' ? [edit.beforeAnchor, edit.afterAnchor] : [edit.startAnchor, edit.endAnchor];
      const at = nth(text, first, edit.occurrence ?? 1);
      if (at === -1) throw new EditError('The first anchor does not occur in the file (at that occurrence).');
      const from = at + first.length;
      const to = text.indexOf(second, from);
      if (to === -1) throw new EditError('The second anchor does not occur after the first one.');
      return text.slice(0, from) + (edit.mode === 'replace_between' ? edit.content : '') + text.slice(to);
    }
  }
}

export const lineCount = (text: string) => (text.length === 0 ? 0 : text.split(/\r?\n/).length);
