import extensions, { KernlabRenderer, RANK } from '../src/mime';
import { SOURCE_MIME, TAPE_MIME } from '../src/types';
import { SOURCE, TAPE, XSS } from './fixtures';

function render(mimeType: string, data: unknown): HTMLElement {
  const ext = extensions.find(e => e.rendererFactory.mimeTypes.includes(mimeType))!;
  const renderer = ext.rendererFactory.createRenderer({
    mimeType, sanitizer: {} as never, resolver: null, linkHandler: null, latexTypesetter: null
  }) as KernlabRenderer;
  void renderer.renderModel({ data: { [mimeType]: data } } as never);
  return renderer.node;
}

describe('mime extension', () => {
  it('registers both types as safe, ahead of text/html', () => {
    expect(extensions.map(e => e.rendererFactory.mimeTypes[0])).toEqual([SOURCE_MIME, TAPE_MIME]);
    for (const ext of extensions) {
      expect(ext.rendererFactory.safe).toBe(true);
      expect(ext.rank).toBe(RANK);
      expect(RANK).toBeLessThan(50);
    }
  });

  it('renders each type into the widget node', () => {
    expect(render(SOURCE_MIME, SOURCE).querySelector('.kl-source')).not.toBeNull();
    expect(render(TAPE_MIME, TAPE).querySelector('.kl-tape')).not.toBeNull();
  });

  it('renders nothing as HTML', () => {
    const node = render(SOURCE_MIME, { ...SOURCE, kernel: XSS });
    expect(node.querySelector('img')).toBeNull();
    expect(node.innerHTML).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});
