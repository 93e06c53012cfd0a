/**
 * kernlab's JupyterLab plugin: cell diagnostics. When a `%%kernel` cell fails to compile,
 * the offending line and columns are marked in that cell's editor; the mark clears when
 * the cell's outputs no longer hold the error (it compiled, or was cleared). The location
 * is read off the error output (see ./diagnostic/parse.ts), so a saved notebook shows
 * its marks again when it is opened. The MIME renderers are in ./mime.ts; kl.lab views
 * (saved rendering first, live widget on top) in ./view.ts.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Cell, ICodeCellModel } from '@jupyterlab/cells';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { EditorView } from '@codemirror/view';

import { IMark, showMark } from './diagnostic/marks';
import { addViewFactory } from './view';
import { diagnosticOf, IErrorOutput, isKernelCell, placeDiagnostic } from './diagnostic/parse';

/** The mark a code cell's current outputs call for, or null. */
export function markFor(model: ICodeCellModel): IMark | null {
  const source = model.sharedModel.getSource();
  if (!isKernelCell(source)) {
    return null;
  }
  const outputs = model.outputs.toJSON() as unknown as IErrorOutput[];
  const diag = diagnosticOf(outputs);
  const place = diag && placeDiagnostic(diag, source, model.executionCount ?? null);
  return diag && place ? { ...place, message: diag.message } : null;
}

const pending = new WeakSet<Cell>();

function update(cell: Cell): void {
  if (pending.has(cell) || cell.isDisposed) {
    return;
  }
  pending.add(cell);
  setTimeout(() => {
    pending.delete(cell);
    if (cell.isDisposed) {
      return;
    }
    const mark = markFor(cell.model as ICodeCellModel);
    void cell.ready.then(() => {
      const view = (cell.editor as unknown as { editor?: EditorView } | null)?.editor;
      if (view && typeof view.dispatch === 'function') {
        showMark(view, mark);
      }
      cell.node.classList.toggle('kl-has-diagnostic', mark !== null);
    });
  }, 0);
}

const watched = new WeakSet<Cell>();

function watchCell(cell: Cell): void {
  if (watched.has(cell) || cell.model.type !== 'code') {
    return;
  }
  watched.add(cell);
  const model = cell.model as ICodeCellModel;
  const onChange = (): void => update(cell);
  model.outputs.changed.connect(onChange);
  cell.disposed.connect(() => model.outputs.changed.disconnect(onChange));
  update(cell);
}

function watchNotebook(panel: NotebookPanel): void {
  const notebook = panel.content;
  const scan = (): void => notebook.widgets.forEach(watchCell);
  void panel.context.ready.then(() => {
    scan();
    notebook.model?.cells.changed.connect(() => setTimeout(scan, 0));
  });
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'kernlab:diagnostics',
  description: 'Marks the line and columns where a %%kernel cell failed to compile.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(watchNotebook);
    tracker.widgetAdded.connect((_, panel) => watchNotebook(panel));
  }
};

/** kl.lab views: each notebook's registry gets the view renderer (./view.ts), which needs
 * that registry to reach the notebook's widget manager. A widget extension runs as the
 * panel is created, before its outputs render. */
const views: JupyterFrontEndPlugin<void> = {
  id: 'kernlab:views',
  description: 'Shows kl.lab views saved with a notebook, and their live widgets while alive.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app: JupyterFrontEnd, rendermime: IRenderMimeRegistry) => {
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: (panel: NotebookPanel) => {
        addViewFactory(panel.content.rendermime, rendermime);
      }
    });
  }
};

export default [plugin, views];
