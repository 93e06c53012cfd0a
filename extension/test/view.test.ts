import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import {
  addViewFactory, IRegistry, modelId, savedPart, VIEW_MIME, VIEW_RANK, ViewRenderer, WIDGET_MIME,
  WIDGET_WAIT_MS, widgetsBound
} from '../src/view';

const flush = (): Promise<void> => new Promise(resolve => setTimeout(resolve, 0));

/** A stand-in for ipywidgets' renderer, doing what jupyterlab_widgets 3 does: text while it
 * loads, an error text when the model is missing, the view's element when it is found. */
class FakeWidgetRenderer extends Panel implements IRenderMime.IRenderer {
  constructor(private models: Set<string>, private later: Promise<void>) {
    super();
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const id = (model.data[WIDGET_MIME] as { model_id: string }).model_id;
    this.node.textContent = 'Loading widget...';
    await this.later;
    if (!this.models.has(id)) {
      this.node.textContent = 'Error displaying widget: model not found';
      return;
    }
    this.node.textContent = '';
    const view = new Widget();
    view.node.textContent = `live ${id}`;
    this.addWidget(view);
  }
}

class FakeHtmlRenderer extends Widget implements IRenderMime.IRenderer {
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = `saved ${String(model.data['text/html'])}`;
  }
}

interface IFake extends IRegistry {
  asked: IRenderMime.IMimeModel['data'][];
  created: string[];
  factories: IRenderMime.IRendererFactory[];
  addFactory(f: IRenderMime.IRendererFactory, rank?: number): void;
}

const BOUND: IRenderMime.IRendererFactory = {
  safe: false, mimeTypes: [WIDGET_MIME], createRenderer: () => null as never
};

function registry(models: string[], withWidgets = true, later = Promise.resolve()): IFake {
  const known = new Set(models);
  const reg: IFake = {
    asked: [],
    created: [],
    factories: [],
    get mimeTypes() {
      return ['text/html', 'text/plain', ...(withWidgets ? [WIDGET_MIME] : []),
        ...reg.factories.flatMap(f => f.mimeTypes)];
    },
    preferredMimeType(bundle) {
      reg.asked.push(bundle);
      return ['text/html', 'text/plain'].find(m => m in bundle);
    },
    createRenderer(mime) {
      reg.created.push(mime);
      return mime === WIDGET_MIME ? new FakeWidgetRenderer(known, later) : new FakeHtmlRenderer();
    },
    getFactory(mime) {
      return reg.factories.find(f => f.mimeTypes.includes(mime)) ??
        (mime === WIDGET_MIME && withWidgets ? BOUND : undefined);
    },
    addFactory(f) {
      reg.factories.push(f);
    }
  };
  return reg;
}

function output(id: string | null, trusted = true): IRenderMime.IMimeModel {
  return {
    trusted,
    data: { [VIEW_MIME]: { version: 1, view: 'grads' }, 'text/html': '<b>table</b>',
      'text/plain': '<kernlab grads: x>', [WIDGET_MIME]: { model_id: 'stale' } },
    metadata: id === null ? {} : { [VIEW_MIME]: { model_id: id } },
    setData: () => undefined
  };
}

function shown(view: ViewRenderer): string {
  return view.widgets.filter(w => !w.isHidden).map(w => w.node.textContent).join('|');
}

describe('kl.lab view renderer', () => {
  it('keeps the saved rendering when the widget model is gone, and shows no error', async () => {
    const reg = registry([]);
    const view = new ViewRenderer(reg);
    await view.renderModel(output('abc123'));
    await flush();
    expect(shown(view)).toBe('saved <b>table</b>');
    expect(view.isLive).toBe(false);
    expect(reg.created).toEqual(['text/html', WIDGET_MIME]);
  });

  it('shows the live widget in place of the saved rendering while its model exists', async () => {
    let release = (): void => undefined;
    const later = new Promise<void>(resolve => (release = resolve));
    const view = new ViewRenderer(registry(['abc123'], true, later));
    await view.renderModel(output('abc123'));
    expect(shown(view)).toBe('saved <b>table</b>'); // still loading: the saved one shows
    release();
    await flush();
    expect(shown(view)).toBe('live abc123');
    expect(view.isLive).toBe(true);
    expect(view.hasClass('kl-is-live')).toBe(true);
  });

  it('brings the saved rendering back when the live view closes', async () => {
    const view = new ViewRenderer(registry(['abc123']));
    await view.renderModel(output('abc123'));
    await flush();
    const live = view.widgets[1] as Panel;
    live.widgets[0].dispose(); // what closing the widget in the kernel does to its view
    await flush();
    expect(shown(view)).toBe('saved <b>table</b>');
    expect(view.hasClass('kl-is-live')).toBe(false);
  });

  it('renders the bundle without its view type and any stale widget view', async () => {
    const reg = registry(['abc123']);
    await new ViewRenderer(reg).renderModel(output('abc123'));
    expect(Object.keys(reg.asked[0]).sort()).toEqual(['text/html', 'text/plain']);
    expect(Object.keys(savedPart(output(null).data)).sort()).toEqual(['text/html', 'text/plain']);
  });

  it('gives up waiting for a widget renderer that never comes', async () => {
    jest.useFakeTimers();
    try {
      const reg = registry(['abc123'], false);
      const view = new ViewRenderer(reg);
      const done = view.renderModel(output('abc123'));
      await jest.advanceTimersByTimeAsync(WIDGET_WAIT_MS + 1000);
      await done;
      expect(reg.created).toEqual(['text/html']);
      expect(shown(view)).toBe('saved <b>table</b>');
    } finally {
      jest.useRealTimers();
    }
  });

  it('asks for no widget when untrusted or without a model id', async () => {
    for (const [reg, out] of [
      [registry(['abc123']), output('abc123', false)],
      [registry(['abc123']), output(null)]
    ] as [IFake, IRenderMime.IMimeModel][]) {
      const view = new ViewRenderer(reg);
      await view.renderModel(out);
      await flush();
      expect(reg.created).toEqual(['text/html']);
      expect(shown(view)).toBe('saved <b>table</b>');
    }
  });

  it('waits for the widget renderer that the widget manager binds later', async () => {
    jest.useFakeTimers();
    try {
      // the notebook's registry starts with the app's renderer, which has no manager
      const unbound = { ...BOUND };
      const app = { getFactory: (m: string) => (m === WIDGET_MIME ? unbound : undefined) };
      const reg = registry(['abc123'], false);
      reg.factories.push(unbound);
      expect(widgetsBound(reg, app)).toBe(false);
      const view = new ViewRenderer(reg, app);
      const done = view.renderModel(output('abc123'));
      await jest.advanceTimersByTimeAsync(1000);
      expect(reg.created).toEqual(['text/html']);
      reg.factories.splice(0, 1, { ...BOUND }); // what jupyterlab_widgets does, session ready
      expect(widgetsBound(reg, app)).toBe(true);
      await jest.advanceTimersByTimeAsync(1000);
      await done;
      expect(reg.created).toEqual(['text/html', WIDGET_MIME]);
      await jest.advanceTimersByTimeAsync(10);
      expect(shown(view)).toBe('live abc123');
    } finally {
      jest.useRealTimers();
    }
  });

  it('re-rendering replaces both children', async () => {
    const view = new ViewRenderer(registry(['abc123']));
    await view.renderModel(output('abc123'));
    await view.renderModel(output('abc123'));
    await flush();
    expect(view.widgets.length).toBe(2);
    expect(shown(view)).toBe('live abc123');
  });

  it('reads only plain model ids', () => {
    const meta = (id: unknown): IRenderMime.IMimeModel =>
      ({ ...output(null), metadata: { [VIEW_MIME]: { model_id: id } } }) as never;
    expect(modelId(meta('0f3a9c_e-1'))).toBe('0f3a9c_e-1');
    expect(modelId(meta('"><img src=x>'))).toBe('');
    expect(modelId(meta(42))).toBe('');
    expect(modelId(output(null))).toBe('');
  });

  it('is added once to a registry, ahead of kernlab types and text/html', () => {
    const reg = registry([]);
    addViewFactory(reg);
    addViewFactory(reg);
    expect(reg.factories.length).toBe(1);
    expect(reg.factories[0].mimeTypes).toEqual([VIEW_MIME]);
    expect(reg.factories[0].safe).toBe(true);
    expect(VIEW_RANK).toBeLessThan(40);
  });
});
