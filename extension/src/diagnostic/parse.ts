/**
 * Where a failed `%%kernel` cell went wrong, read off its error output.
 *
 * kernlab's compile errors (the KernelError family) carry the location in the documented
 * form that kernlab/notebook/mime.py describes (tests/test_extension.py holds the Python
 * side to it):
 *
 *       --> cell [7], line 4, in kernel 'broken'
 *        4 |     x[i] = sin(x[i], 2.0)
 *          |            ^^^^^^^^^^^^^^
 *
 * (line counted from the %%kernel line, as the editor counts; columns from the carets).
 * A Python SyntaxError in the cell is located from its traceback: `Cell In[7], line 3`
 * (or `File ...:3`), then the offending line as Python shows it (stripped) and a caret.
 */

export interface IDiagnostic {
  line: number; // 1-based, as the editor counts
  from: number | null; // 0-based columns of that line; null: the whole line
  to: number | null;
  message: string;
  cell: number | null; // the execution count the error names, when it names one
  code: string | null; // the line's text as the error shows it, to check against the editor
}

export interface IErrorOutput {
  output_type: string;
  ename?: string;
  evalue?: string;
  traceback?: string[];
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

const WHERE = /^\s*--> (.*?), line (\d+)(?:, in kernel .*)?$/;
const SNIPPET = /^\s*(\d+) \| (.*)$/;
const CARET = /^\s*\| ( *)(\^+)\s*$/;

/** A KernelError's location from its message (``evalue``, or the traceback's lines). */
export function parseKernelError(text: string, ename = ''): IDiagnostic | null {
  const lines = stripAnsi(text).split('\n');
  const at = lines.findIndex(line => WHERE.test(line));
  if (at < 0) {
    return null;
  }
  const [, file, number] = WHERE.exec(lines[at])!;
  const cell = /^cell(?: \[(\d+)\])?$/.exec(file);
  if (!cell) {
    return null; // the error is in a file (an imported func), not in this notebook
  }
  const line = Number(number);
  const out: IDiagnostic = {
    line, from: null, to: null, message: '', cell: cell[1] ? Number(cell[1]) : null, code: null
  };
  let after = at + 1; // the message follows the location when str(err) put it last
  const snippet = SNIPPET.exec(lines[at + 1] ?? '');
  if (snippet && Number(snippet[1]) === line) {
    out.code = snippet[2];
    after = at + 2;
    const caret = CARET.exec(lines[at + 2] ?? '');
    if (caret) {
      out.from = caret[1].length;
      out.to = out.from + caret[2].length;
      after = at + 3;
    }
  }
  // The message comes first in a display (err.report()) and last in str(err) (Warp's order)
  const head = lines.slice(0, at).filter(l => l.trim()).map(l => l.trim());
  const tail = lines.slice(after).filter(l => l.trim()).map(l => l.trim());
  let message = (head.length ? head : tail).join('\n');
  if (ename && !message.startsWith(ename)) {
    message = `${ename}: ${message}`;
  }
  out.message = message;
  return out;
}

const PY_WHERE = /^\s*(?:Cell In\[(\d+)\], line (\d+)|File .*?[:,] ?(?:line )?(\d+))/;

/** A SyntaxError's location from an IPython traceback (the last frame names the cell). */
export function parseSyntaxError(traceback: string[], evalue = ''): IDiagnostic | null {
  const lines = stripAnsi(traceback.join('\n')).split('\n');
  for (let k = lines.length - 1; k >= 0; k--) {
    const m = PY_WHERE.exec(lines[k]);
    if (!m) {
      continue;
    }
    const line = Number(m[2] ?? m[3]);
    const message = `SyntaxError: ${evalue.replace(/\s*\([^()]*, line \d+\)$/, '')}`;
    const out: IDiagnostic = {
      line, from: null, to: null, message, cell: m[1] ? Number(m[1]) : null, code: null
    };
    const shown = lines[k + 1] ?? '';
    const caret = /^(\s*)\^+\s*$/.exec(lines[k + 2] ?? '');
    if (shown.trim() && caret) {
      const indent = shown.length - shown.trimStart().length;
      out.code = shown.trim();
      out.from = Math.max(0, caret[1].length - indent); // within the stripped line
      out.to = out.from + 1;
    }
    return out;
  }
  return null;
}

/** The diagnostic of a cell's outputs: the first error output that names a location. */
export function diagnosticOf(outputs: IErrorOutput[]): IDiagnostic | null {
  for (const output of outputs) {
    if (output.output_type !== 'error') {
      continue;
    }
    const ename = output.ename ?? '';
    const traceback = Array.isArray(output.traceback) ? output.traceback : [];
    if (ename === 'SyntaxError' || ename === 'IndentationError') {
      return parseSyntaxError(traceback, output.evalue ?? '');
    }
    return parseKernelError(output.evalue ?? '', ename) ??
      parseKernelError(traceback.join('\n'));
  }
  return null;
}

/** Whether a cell's source is a `%%kernel` cell. */
export function isKernelCell(source: string): boolean {
  return /^\s*%%kernel\b/.test(source);
}

/**
 * Where to mark ``diag`` in a cell whose source is ``source`` and whose last run had
 * ``executionCount``: line and column range in the editor, or null when the error is
 * not this cell's (the line it shows is not this cell's line: another cell's func, or
 * the cell was edited since).
 */
export function placeDiagnostic(
  diag: IDiagnostic,
  source: string,
  executionCount: number | null
): { line: number; from: number; to: number } | null {
  // The line's text decides whether the error is this cell's; the number an error gives
  // its cell is only a fallback (IPython numbers a cell magic's source one past the
  // prompt's execution count in some kernels).
  if (diag.code === null && diag.cell !== null && executionCount !== null &&
      diag.cell !== executionCount) {
    return null;
  }
  const lines = source.split('\n');
  const text = lines[diag.line - 1];
  if (text === undefined) {
    return null;
  }
  const indent = text.length - text.trimStart().length;
  const whole = { line: diag.line, from: indent, to: Math.max(indent, text.length) };
  if (diag.code === null) {
    return whole;
  }
  let offset: number;
  if (text.trimEnd() === diag.code.trimEnd()) {
    offset = 0; // a KernelError shows the line as it is, columns as they are
  } else if (diag.code.trim() && text.trim() === diag.code.trim()) {
    offset = indent; // Python shows it stripped: columns count from its first character
  } else {
    return null; // the error names a line of other text: another cell's
  }
  if (diag.from === null || diag.to === null) {
    return whole;
  }
  const from = Math.min(text.length, offset + diag.from);
  const to = Math.min(text.length, Math.max(from + 1, offset + diag.to));
  return from < to ? { line: diag.line, from, to } : whole;
}
