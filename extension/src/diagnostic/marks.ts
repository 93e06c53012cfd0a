/**
 * The mark a failed `%%kernel` cell leaves in its editor (CodeMirror 6): the line gets a
 * background and the offending columns a wavy underline, both titled with the message.
 * The mark follows edits until the next result replaces it (cleared when the cell
 * compiles).
 */
import { EditorState, StateEffect, StateField, Extension, Range } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView } from '@codemirror/view';

export interface IMark {
  line: number; // 1-based
  from: number; // 0-based columns in that line
  to: number;
  message: string;
}

export const setMark = StateEffect.define<IMark | null>();

function decorations(state: EditorState, mark: IMark | null): DecorationSet {
  if (!mark || mark.line < 1 || mark.line > state.doc.lines) {
    return Decoration.none;
  }
  const line = state.doc.line(mark.line);
  const attributes = { title: mark.message };
  const ranges: Range<Decoration>[] = [
    Decoration.line({ class: 'kl-diagnostic-line', attributes }).range(line.from)
  ];
  const from = line.from + Math.min(mark.from, line.length);
  const to = line.from + Math.min(Math.max(mark.to, mark.from), line.length);
  if (to > from) {
    ranges.push(Decoration.mark({ class: 'kl-diagnostic-mark', attributes }).range(from, to));
  }
  return Decoration.set(ranges, true);
}

export const markField = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(marks, tr) {
    marks = marks.map(tr.changes);
    for (const effect of tr.effects) {
      if (effect.is(setMark)) {
        marks = decorations(tr.state, effect.value);
      }
    }
    return marks;
  },
  provide: field => EditorView.decorations.from(field)
});

export const diagnosticExtension: Extension = markField;

/** The marks an editor state shows now, as [from, to, class] (for tests and checks). */
export function marksOf(state: EditorState): [number, number, string][] {
  const out: [number, number, string][] = [];
  const set = state.field(markField, false);
  set?.between(0, state.doc.length, (from, to, value) => {
    out.push([from, to, String(value.spec.class)]);
  });
  return out;
}

/** Shows ``mark`` in ``view`` (null clears it), adding the field on first use. */
export function showMark(view: EditorView, mark: IMark | null): void {
  if (view.state.field(markField, false) === undefined) {
    if (mark === null) {
      return;
    }
    view.dispatch({ effects: StateEffect.appendConfig.of(diagnosticExtension) });
  }
  view.dispatch({ effects: setMark.of(mark) });
}
