/**
 * The MIME renderers: kernlab's source+json (a kernel's source next to its listings) and
 * tape+json (a tape as a graph). Rank 40 puts them ahead of text/html (50), which every
 * kernlab bundle carries as a fallback, and behind live widget views (0), which a
 * kl.lab widget's bundle also carries. `safe: true`: they never insert HTML, so they
 * render in untrusted notebooks too.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { renderSource } from './render/source';
import { renderTape } from './render/tape';
import { SOURCE_MIME, TAPE_MIME } from './types';

export const RANK = 40;

export class KernlabRenderer extends Widget implements IRenderMime.IRenderer {
  private mimeType: string;
  private render: (data: unknown) => HTMLElement;

  constructor(options: IRenderMime.IRendererOptions, render: (data: unknown) => HTMLElement) {
    super();
    this.mimeType = options.mimeType;
    this.render = render;
    this.addClass('kl-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.replaceChildren(this.render(model.data[this.mimeType]));
    return Promise.resolve();
  }
}

function factory(
  mimeType: string,
  render: (data: unknown) => HTMLElement
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [mimeType],
    defaultRank: RANK,
    createRenderer: options => new KernlabRenderer(options, render)
  };
}

export const sourceExtension: IRenderMime.IExtension = {
  id: 'kernlab:source-renderer',
  rendererFactory: factory(SOURCE_MIME, renderSource),
  rank: RANK,
  dataType: 'json'
};

export const tapeExtension: IRenderMime.IExtension = {
  id: 'kernlab:tape-renderer',
  rendererFactory: factory(TAPE_MIME, renderTape),
  rank: RANK,
  dataType: 'json'
};

const extensions: IRenderMime.IExtension[] = [sourceExtension, tapeExtension];
export default extensions;
