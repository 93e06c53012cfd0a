import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';

import { marksOf, markField, setMark, showMark } from '../src/diagnostic/marks';
import {
  diagnosticOf, isKernelCell, parseKernelError, parseSyntaxError, placeDiagnostic
} from '../src/diagnostic/parse';

const CELL = [
  '%%kernel',
  'def broken(x: array(dtype=float32)):',
  '    i = tid()',
  '    x[i] = sin(x[i], 2.0)'
].join('\n');

// An error output as ipykernel sends it for a KernelError raised by the %%kernel magic.
const KERNEL_ERROR = {
  output_type: 'error',
  ename: 'KernelTypeError',
  evalue: [
    'no overload of sin() accepts (float32, float32)',
    '  candidates: sin(float32) -> float32 | sin(float64) -> float64',
    "  --> cell, line 4, in kernel 'broken'",
    '   4 |     x[i] = sin(x[i], 2.0)',
    '     |            ^^^^^^^^^^^^^^'
  ].join('\n'),
  traceback: ['KernelTypeError: no overload of sin() accepts (float32, float32)']
};

// ... and for a Python SyntaxError in the cell (IPython's coloured traceback, abridged).
const SYNTAX_ERROR = {
  output_type: 'error',
  ename: 'SyntaxError',
  evalue: "'(' was never closed (3036985680.py, line 3)",
  traceback: [
    'Traceback \u001b[36m(most recent call last)\u001b[39m:\n',
    '  Cell \u001b[92mIn[4]\u001b[39m\u001b[92m, line 1\u001b[39m\n    %%kernel\n',
    '  \u001b[36mCell\u001b[39m\u001b[36m \u001b[39m\u001b[32mIn[4]\u001b[39m\u001b[32m, line 3' +
      '\u001b[39m\n\u001b[31m    \u001b[39m\u001b[31mx[tid()] = (\u001b[39m\n' +
      '               ^\n\u001b[31mSyntaxError\u001b[39m\u001b[31m:\u001b[39m \'(\' was never closed\n'
  ]
};

describe('parsing error outputs', () => {
  it('reads line and columns of a KernelError', () => {
    const diag = diagnosticOf([KERNEL_ERROR])!;
    expect(diag).toMatchObject({ line: 4, from: 11, to: 25, cell: null });
    expect(diag.message).toBe('KernelTypeError: no overload of sin() accepts (float32, float32)\n' +
      'candidates: sin(float32) -> float32 | sin(float64) -> float64');
    expect(placeDiagnostic(diag, CELL, 5)).toEqual({ line: 4, from: 11, to: 25 });
  });

  it('reads the cell number when the error names one', () => {
    const diag = parseKernelError("bad\n  --> cell [7], line 2, in kernel 'k'")!;
    expect(diag.cell).toBe(7);
    expect(placeDiagnostic(diag, CELL, 7)).toEqual({ line: 2, from: 0, to: 36 });
    expect(placeDiagnostic(diag, CELL, 8)).toBeNull(); // another run's error
  });

  it('trusts the line text over the cell number', () => {
    const diag = { ...diagnosticOf([KERNEL_ERROR])!, cell: 9 };
    expect(placeDiagnostic(diag, CELL, 8)).toEqual({ line: 4, from: 11, to: 25 });
  });

  it('reads the message after the location, as str(err) orders it (Warp\'s order)', () => {
    const text = "--> cell [7], line 4, in kernel 'broken'\n   4 |     x[i] = sin(x[i], 2.0)\n" +
      '     |            ^^^^^^^^^^^^^^\nno overload of sin() accepts (float32, float32)';
    const diag = parseKernelError(text, 'KernelTypeError')!;
    expect(diag).toMatchObject({ line: 4, cell: 7, from: 11, to: 25 });
    expect(diag.message).toBe('KernelTypeError: no overload of sin() accepts (float32, float32)');
  });

  it('ignores errors located in files', () => {
    expect(parseKernelError("bad\n  --> kernels.py, line 2, in kernel 'k'")).toBeNull();
  });

  it('does not mark a line whose text is not the one the error shows', () => {
    const diag = diagnosticOf([KERNEL_ERROR])!;
    expect(placeDiagnostic(diag, CELL.replace('sin(x[i], 2.0)', 'sin(x[i])'), null)).toBeNull();
  });

  it('reads a SyntaxError from the traceback', () => {
    const diag = diagnosticOf([SYNTAX_ERROR])!;
    expect(diag).toMatchObject({ line: 3, cell: 4, code: 'x[tid()] = (' });
    expect(diag.message).toBe("SyntaxError: '(' was never closed");
    const cell = '%%kernel\ndef oops(x: array(dtype=float32)):\n    x[tid()] = (\n';
    expect(placeDiagnostic(diag, cell, 4)).toEqual({ line: 3, from: 15, to: 16 });
  });

  it('finds nothing in outputs without an error', () => {
    expect(diagnosticOf([{ output_type: 'stream' }])).toBeNull();
    expect(parseSyntaxError(['nothing here'])).toBeNull();
  });

  it('knows a %%kernel cell', () => {
    expect(isKernelCell(CELL)).toBe(true);
    expect(isKernelCell('%%kernels\n')).toBe(false);
    expect(isKernelCell('x = 1')).toBe(false);
  });
});

describe('editor marks', () => {
  const mark = { line: 4, from: 11, to: 25, message: 'KernelTypeError: <b>no</b>' };

  it('marks the line and the columns, and clears', () => {
    const parent = document.createElement('div');
    document.body.appendChild(parent);
    const view = new EditorView({ doc: CELL, parent });
    showMark(view, mark);
    const start = view.state.doc.line(4).from;
    expect(marksOf(view.state)).toEqual([
      [start, start, 'kl-diagnostic-line'],
      [start + 11, start + 25, 'kl-diagnostic-mark']
    ]);
    const marked = view.contentDOM.querySelector('.kl-diagnostic-mark')!;
    expect(marked.textContent).toBe('sin(x[i], 2.0)');
    expect(marked.getAttribute('title')).toBe('KernelTypeError: <b>no</b>');
    expect(view.contentDOM.querySelector('b')).toBeNull();
    showMark(view, null);
    expect(marksOf(view.state)).toEqual([]);
    view.destroy();
  });

  it('follows edits above the mark', () => {
    let state = EditorState.create({ doc: CELL, extensions: [markField] });
    state = state.update({ effects: setMark.of(mark) }).state;
    state = state.update({ changes: { from: 0, insert: '\n' } }).state;
    const start = state.doc.line(5).from;
    expect(marksOf(state)[1]).toEqual([start + 11, start + 25, 'kl-diagnostic-mark']);
  });

  it('ignores a line the editor does not have', () => {
    let state = EditorState.create({ doc: 'x', extensions: [markField] });
    state = state.update({ effects: setMark.of({ ...mark, line: 9 }) }).state;
    expect(marksOf(state)).toEqual([]);
  });
});
