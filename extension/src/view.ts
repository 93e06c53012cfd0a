/**
 * kernlab's view type: a `kl.lab` view (inspect, tape, grads, step) as a saved rendering
 * that a live widget replaces while its model is alive.
 *
 * The Python side displays a bundle without `application/vnd.jupyter.widget-view+json`:
 *
 *     data:     {"application/vnd.kernlab.view+json": {"version": 1, "view": "tape"},
 *                "application/vnd.kernlab.tape+json": {...},      (inspect: source+json)
 *                "text/html": "...", "text/plain": "<kernlab tape: ...>"}
 *     metadata: {"application/vnd.kernlab.view+json": {"model_id": "<ipywidgets model>"}}
 *
 * (the model id is metadata so that a notebook's saved outputs compare equal run to run).
 * This renderer first renders the rest of the bundle exactly as JupyterLab would without
 * it (the notebook's own preferred type: kernlab's renderers, else text/html), then asks
 * the notebook's widget renderer for the model's view in a hidden child. Only when that
 * view has attached an element does it take the place of the saved rendering; a model
 * that is gone (a reopened notebook, a restarted kernel) leaves the saved rendering in
 * place. The widget view is rendered only once the notebook's widget manager holds the
 * model (``has_model``, after the manager has restored the models a running kernel still
 * has): asking the widget renderer for a missing model would log ipywidgets' "widget model
 * not found" to the browser console and write "Error displaying widget: model not found"
 * into its (hidden) node. When the live view closes, the saved rendering comes back.
 *
 * Front ends without this renderer (nbconvert, classic Notebook, VS Code, GitHub) skip the
 * unknown type and show kernlab's type or text/html: every one of them sees a rendering.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel } from '@lumino/widgets';

import { SOURCE_MIME } from './types';

export const VIEW_MIME = 'application/vnd.kernlab.view+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
/** Ahead of kernlab's other renderers (40) and text/html (50). */
export const VIEW_RANK = 20;
/** How long a view waits for the notebook's widget renderer to appear, and how often it looks. */
export const WIDGET_WAIT_MS = 120000;
const WIDGET_POLL_MS = 250;
/** How long a restored widget manager is given for a model to arrive (ipywidgets' own
 * get_model waits as long for a model whose comm is still opening). */
export const MODEL_GRACE_MS = 2000;

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

/** What this renderer needs of a notebook's widget manager (jupyterlab_widgets'
 * LabWidgetManager, ipywidgets 8): whether it holds a model, and whether it has finished
 * restoring the models of the kernel it connected to. */
export interface IWidgetManager {
  has_model(modelId: string): boolean;
  readonly restoredStatus?: boolean;
}

/** The widget manager a notebook's widget renderer is bound to, or null where it cannot be
 * reached. jupyterlab_widgets' WidgetRenderer keeps it in a private PromiseDelegate
 * (``_manager``), resolved at construction for the renderer the notebook's registry makes;
 * nothing public exposes it, so this reads that field and checks the shape of what it
 * finds. */
export async function managerOf(renderer: unknown): Promise<IWidgetManager | null> {
  const delegate = (renderer as { _manager?: { promise?: unknown } } | null)?._manager;
  const promise = delegate?.promise as Promise<unknown> | undefined;
  if (!promise || typeof promise.then !== 'function') {
    return null;
  }
  const manager = (await promise) as IWidgetManager | null;
  return manager && typeof manager.has_model === 'function' ? manager : null;
}

/** Whether ``manager`` holds the model ``id``: at once when it does; while the manager
 * restores a running kernel's models (a reopened notebook), once that is done; else after
 * MODEL_GRACE_MS more. False when ``alive()`` turns false (the output re-rendered or closed). */
export async function modelAvailable(
  manager: IWidgetManager,
  id: string,
  alive: () => boolean
): Promise<boolean> {
  const deadline = Date.now() + WIDGET_WAIT_MS;
  let restoredAt: number | null = null;
  while (alive()) {
    if (manager.has_model(id)) {
      return true;
    }
    const now = Date.now();
    if (manager.restoredStatus !== false) {
      restoredAt = restoredAt ?? now;
      if (now - restoredAt >= MODEL_GRACE_MS) {
        return false;
      }
    }
    if (now > deadline) {
      return false;
    }
    await sleep(WIDGET_POLL_MS);
  }
  return false;
}

type Bundle = IRenderMime.IMimeModel['data'];

/** What this renderer needs of a notebook's rendermime registry (IRenderMimeRegistry). */
export interface IRegistry {
  readonly mimeTypes: ReadonlyArray<string>;
  preferredMimeType(bundle: Bundle, safe?: 'ensure' | 'prefer' | 'any'): string | undefined;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
  getFactory(mimeType: string): IRenderMime.IRendererFactory | undefined;
}

/** Whether a notebook's registry renders widget views with the notebook's widget manager.
 * jupyterlab_widgets puts a widget renderer without a manager into the app's registry,
 * which every notebook's registry starts as a copy of; once the notebook's kernel session
 * is ready it replaces that one, in the notebook's registry only, by one bound to the
 * notebook's manager. A view rendered by the unbound one would say "Loading widget..."
 * for ever, so the live view waits for the bound one. */
export function widgetsBound(
  registry: Pick<IRegistry, 'getFactory'>,
  app: Pick<IRegistry, 'getFactory'> | null
): boolean {
  const factory = registry.getFactory(WIDGET_MIME);
  return factory !== undefined && (app === null || factory !== app.getFactory(WIDGET_MIME));
}

class Model implements IRenderMime.IMimeModel {
  constructor(
    readonly data: Bundle,
    readonly metadata: IRenderMime.IMimeModel['metadata'],
    readonly trusted: boolean
  ) {}

  setData(): void {
    // a view's saved data is fixed; nothing edits it
  }
}

/** Whether a view keeps its saved rendering even while its widget is alive: an inspect view
 * drawn by kernlab's source renderer, whose hover links the live widget does not have. */
export function keepsSaved(data: Bundle, savedMime: string | undefined): boolean {
  const view = data[VIEW_MIME] as { view?: unknown } | undefined;
  return view?.view === 'inspect' && savedMime === SOURCE_MIME;
}

/** The bundle without the view type and any widget view: what the saved rendering shows. */
export function savedPart(data: Bundle): Bundle {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    if (key !== VIEW_MIME && key !== WIDGET_MIME) {
      rest[key] = value;
    }
  }
  return rest as Bundle;
}

/** The widget model id in an output's metadata, or '' (a string of hex digits only). */
export function modelId(model: IRenderMime.IMimeModel): string {
  const meta = (model.metadata ?? {})[VIEW_MIME] as Record<string, unknown> | undefined;
  const id = meta && typeof meta === 'object' ? meta['model_id'] : undefined;
  return typeof id === 'string' && /^[0-9a-zA-Z_-]{1,64}$/.test(id) ? id : '';
}

export class ViewRenderer extends Panel implements IRenderMime.IRenderer {
  private saved: IRenderMime.IRenderer | null = null;
  private live: IRenderMime.IRenderer | null = null;
  private observer: MutationObserver | null = null;
  private generation = 0;

  constructor(
    private registry: IRegistry,
    private app: Pick<IRegistry, 'getFactory'> | null = null
  ) {
    super();
    this.addClass('kl-view');
  }

  /** Whether the live widget is what shows now. */
  get isLive(): boolean {
    return this.live !== null && !this.live.isHidden;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.clear();
    const rest = savedPart(model.data);
    const mime = this.registry.preferredMimeType(rest, model.trusted ? 'any' : 'ensure');
    if (mime) {
      this.saved = this.registry.createRenderer(mime);
      this.saved.addClass('kl-view-saved');
      this.addWidget(this.saved);
      await this.saved.renderModel(new Model(rest, model.metadata, model.trusted));
    }
    const id = modelId(model);
    // a widget view runs code: only for trusted outputs (what ran here, or a signed notebook)
    if (!id || !model.trusted || keepsSaved(model.data, mime)) {
      return;
    }
    // in the background: the saved rendering is complete, and what awaits it goes on
    const generation = this.generation;
    void this.widgetsReady(generation).then(async ready => {
      if (ready) {
        await this.showLive(id, generation);
      }
    });
  }

  /** Whether the notebook's registry renders widget views with its manager, waiting for it
   * a while: that renderer comes only once the notebook's kernel session is ready, after a
   * reopened notebook has rendered its outputs (see widgetsBound). */
  private async widgetsReady(generation: number): Promise<boolean> {
    const deadline = Date.now() + WIDGET_WAIT_MS;
    while (!widgetsBound(this.registry, this.app)) {
      if (Date.now() > deadline) {
        return false;
      }
      await new Promise(resolve => setTimeout(resolve, WIDGET_POLL_MS));
      if (this.isDisposed || generation !== this.generation) {
        return false;
      }
    }
    return !this.isDisposed && generation === this.generation;
  }

  private async showLive(id: string, generation: number): Promise<void> {
    const live = this.registry.createRenderer(WIDGET_MIME);
    const alive = (): boolean => !this.isDisposed && generation === this.generation;
    const manager = await managerOf(live);
    // without a reachable manager (another jupyterlab_widgets) the widget renderer decides
    if (manager !== null && !(await modelAvailable(manager, id, alive))) {
      live.dispose(); // never rendered: nothing is logged, the saved rendering stays
      return;
    }
    if (!alive()) {
      live.dispose();
      return;
    }
    this.live = live;
    live.addClass('kl-view-live');
    live.hide();
    this.addWidget(live);
    this.observer = new MutationObserver(() => this.sync());
    this.observer.observe(live.node, { childList: true });
    const view = { model_id: id, version_major: 2, version_minor: 0 };
    live.renderModel(new Model({ [WIDGET_MIME]: view }, {}, true)).then(
      () => this.sync(),
      () => this.sync()
    );
  }

  /** Shows the live view while it holds an element (a rendered widget), else the saved one.
   * The widget renderer writes only text while it loads or when the model is missing. */
  private sync(): void {
    const live = this.live;
    if (live === null || live.isDisposed) {
      return;
    }
    const on = live.node.childElementCount > 0;
    if (on) {
      live.show();
      this.saved?.hide();
    } else {
      live.hide();
      this.saved?.show();
    }
    this.toggleClass('kl-is-live', on);
  }

  private clear(): void {
    this.generation += 1;
    this.observer?.disconnect();
    this.observer = null;
    for (const child of [this.saved, this.live]) {
      if (child !== null && !child.isDisposed) {
        child.dispose();
      }
    }
    this.saved = this.live = null;
    this.removeClass('kl-is-live');
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.clear();
    }
    super.dispose();
  }
}

/** The renderer factory for one notebook's registry; ``app`` is the app's registry. */
export function viewFactory(
  registry: IRegistry,
  app: Pick<IRegistry, 'getFactory'> | null = null
): IRenderMime.IRendererFactory {
  return {
    safe: true, // it inserts nothing itself; what it delegates to keeps its own rules
    mimeTypes: [VIEW_MIME],
    defaultRank: VIEW_RANK,
    createRenderer: () => new ViewRenderer(registry, app)
  };
}

/** Adds the view renderer to a notebook's registry (the one its widget manager binds). */
export function addViewFactory(
  registry: IRegistry & { addFactory(f: IRenderMime.IRendererFactory, rank?: number): void },
  app: Pick<IRegistry, 'getFactory'> | null = null
): void {
  if (!registry.mimeTypes.includes(VIEW_MIME)) {
    registry.addFactory(viewFactory(registry, app), VIEW_RANK);
  }
}
