import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import {
  addViewFactory, IRegistry, keepsSaved, managerOf, MODEL_GRACE_MS, modelAvailable, modelId,
  savedPart, VIEW_MIME, VIEW_RANK, ViewRenderer, WIDGET_MIME, WIDGET_WAIT_MS,
  widgetsBound
} from '../src/view';
import { SOURCE_MIME } from '../src/types';

const flush = (): Promise<void> => new Promise(resolve => setTimeout(resolve, 0));

/** A stand-in for ipywidgets' renderer, doing what jupyterlab_widgets 3 does: text while it
 * loads, an error text when the model is missing, the view's element when it is found. */
class FakeWidgetRenderer extends Panel implements IRenderMime.IRenderer {
  /** As jupyterlab_widgets' WidgetRenderer keeps its manager: a resolved PromiseDelegate. */
  _manager?: { promise: Promise<FakeManager> };

  constructor(
    private models: Set<string>,
    private later: Promise<void>,
    manager: FakeManager | null,
    private rendered: string[]
  ) {
    super();
    if (manager) {
      this._manager = { promise: Promise.resolve(manager) };
    }
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const id = (model.data[WIDGET_MIME] as { model_id: string }).model_id;
    this.rendered.push(id);
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

/** ipywidgets' manager as the view renderer sees it: the models it holds, and whether it has
 * finished restoring a kernel's models. */
class FakeManager {
  constructor(public models: Set<string>, public restoredStatus = true) {}

  has_model(id: string): boolean {
    return this.models.has(id);
  }
}

interface IFake extends IRegistry {
  asked: IRenderMime.IMimeModel['data'][];
  created: string[];
  rendered: string[]; // model ids the widget renderer was asked for
  manager: FakeManager | null;
  factories: IRenderMime.IRendererFactory[];
  addFactory(f: IRenderMime.IRendererFactory, rank?: number): void;
}

const BOUND: IRenderMime.IRendererFactory = {
  safe: false, mimeTypes: [WIDGET_MIME], createRenderer: () => null as never
};

function registry(models: string[], withWidgets = true, later = Promise.resolve(),
  reachable = true): IFake {
  const known = new Set(models);
  const reg: IFake = {
    asked: [],
    created: [],
    rendered: [],
    manager: reachable ? new FakeManager(known) : null,
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
      return mime === WIDGET_MIME
        ? new FakeWidgetRenderer(known, later, reg.manager, reg.rendered)
        : new FakeHtmlRenderer();
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
  it('keeps the saved rendering when the widget model is gone, and never asks for it', async () => {
    jest.useFakeTimers();
    try {
      const reg = registry([]);
      const view = new ViewRenderer(reg);
      await view.renderModel(output('abc123'));
      await jest.advanceTimersByTimeAsync(MODEL_GRACE_MS + 1000);
      expect(shown(view)).toBe('saved <b>table</b>');
      expect(view.isLive).toBe(false);
      // the widget renderer was made (to reach the manager) but never rendered the missing
      // model: ipywidgets logs "model not found" only from rendering, so nothing is logged
      expect(reg.created).toEqual(['text/html', WIDGET_MIME]);
      expect(reg.rendered).toEqual([]);
      expect(view.node.textContent).not.toContain('model not found');
      expect(view.widgets.length).toBe(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('waits for the manager to restore a running kernel\'s models', async () => {
    jest.useFakeTimers();
    try {
      const reg = registry([]);
      reg.manager!.restoredStatus = false; // a reopened notebook: the kernel's models arrive
      const view = new ViewRenderer(reg);
      await view.renderModel(output('abc123'));
      await jest.advanceTimersByTimeAsync(5000);
      expect(reg.rendered).toEqual([]);
      reg.manager!.models.add('abc123');
      reg.manager!.restoredStatus = true;
      await jest.advanceTimersByTimeAsync(1000);
      expect(reg.rendered).toEqual(['abc123']);
      expect(shown(view)).toBe('live abc123');
    } finally {
      jest.useRealTimers();
    }
  });

  it('leaves the decision to the widget renderer when its manager cannot be reached', async () => {
    const reg = registry([], true, Promise.resolve(), false);
    const view = new ViewRenderer(reg);
    await view.renderModel(output('abc123'));
    await flush();
    expect(reg.rendered).toEqual(['abc123']);
    expect(shown(view)).toBe('saved <b>table</b>'); // its error text stays hidden
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

  it('keeps an inspect view on the source renderer, which links lines by hover', async () => {
    const reg = registry(['abc123']);
    reg.preferredMimeType = bundle => {
      reg.asked.push(bundle);
      return SOURCE_MIME in bundle ? SOURCE_MIME : 'text/html';
    };
    const inspect = (withSource: boolean): IRenderMime.IMimeModel => ({
      ...output('abc123'),
      data: { [VIEW_MIME]: { version: 1, view: 'inspect' }, 'text/html': '<b>listing</b>',
        ...(withSource ? { [SOURCE_MIME]: { version: 1 } } : {}) }
    });
    const kept = new ViewRenderer(reg);
    await kept.renderModel(inspect(true));
    await flush();
    expect(keepsSaved(inspect(true).data, SOURCE_MIME)).toBe(true);
    expect(reg.created).toEqual([SOURCE_MIME]); // no widget renderer is even made
    expect(reg.rendered).toEqual([]);
    expect(kept.isLive).toBe(false);
    // where only text/html could draw it, the live widget (its dropdown) is the better view
    const html = new ViewRenderer(reg);
    await html.renderModel(inspect(false));
    await flush();
    expect(keepsSaved(inspect(false).data, 'text/html')).toBe(false);
    expect(reg.rendered).toEqual(['abc123']);
    expect(html.isLive).toBe(true);
    // other views never keep the saved one
    expect(keepsSaved(output('abc123').data, SOURCE_MIME)).toBe(false);
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

describe('the widget manager behind a widget renderer', () => {
  it('is read off the renderer, or null where it has none', async () => {
    const manager = new FakeManager(new Set(['m1']));
    expect(await managerOf({ _manager: { promise: Promise.resolve(manager) } })).toBe(manager);
    expect(await managerOf({})).toBeNull();
    expect(await managerOf(null)).toBeNull();
    expect(await managerOf({ _manager: { promise: Promise.resolve({}) } })).toBeNull();
  });

  it('says whether a model is there, waiting only while the manager restores', async () => {
    jest.useFakeTimers();
    try {
      const manager = new FakeManager(new Set(['m1']), false);
      expect(await modelAvailable(manager, 'm1', () => true)).toBe(true);
      const missing = modelAvailable(manager, 'gone', () => true);
      await jest.advanceTimersByTimeAsync(WIDGET_WAIT_MS / 2);
      manager.restoredStatus = true;
      let answer: boolean | null = null;
      void missing.then(a => (answer = a));
      await jest.advanceTimersByTimeAsync(MODEL_GRACE_MS / 2);
      expect(answer).toBeNull(); // a comm that is still opening gets the grace time
      await jest.advanceTimersByTimeAsync(MODEL_GRACE_MS);
      expect(answer).toBe(false);
      let stopped = false;
      const closed = modelAvailable(new FakeManager(new Set(), false), 'x', () => !stopped);
      stopped = true;
      await jest.advanceTimersByTimeAsync(1000);
      expect(await closed).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
