import { renderSource, linkedLines } from '../src/render/source';
import { readListing, originKey } from '../src/types';
import { SOURCE, XSS } from './fixtures';

function hover(node: Element): void {
  node.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
}

function srcLine(root: HTMLElement, line: number): HTMLElement {
  return root.querySelector(`.kl-src-line[data-line="${line}"]`) as HTMLElement;
}

function linkedGenerated(root: HTMLElement): number[] {
  return [...root.querySelectorAll('.kl-gen-line')]
    .map((node, k) => (node.classList.contains('kl-linked') ? k + 1 : 0))
    .filter(k => k);
}

describe('source renderer', () => {
  it('shows the kernel source with its line numbers and the first listing', () => {
    const root = renderSource(SOURCE);
    expect(root.querySelector('.kl-name')!.textContent).toBe('saxpy');
    const lines = [...root.querySelectorAll('.kl-src-line .kl-lineno')].map(n => n.textContent);
    expect(lines).toEqual(['2', '3', '4', '5']);
    expect(root.querySelectorAll('.kl-gen-line')).toHaveLength(7);
    expect(root.querySelector('.kl-tab.kl-active')!.textContent).toBe('IR');
  });

  it('highlights the generated lines that came from a hovered user line', () => {
    const root = renderSource(SOURCE);
    hover(srcLine(root, 5));
    expect(linkedGenerated(root)).toEqual([4, 5, 6]);
    expect(srcLine(root, 5).classList.contains('kl-linked')).toBe(true);
    expect(root.querySelector('.kl-status')!.textContent).toContain('line 5 → 3 lines of IR');
    hover(srcLine(root, 3));
    expect(linkedGenerated(root)).toEqual([3]);
  });

  it('clears the highlight when the pointer leaves', () => {
    const root = renderSource(SOURCE);
    hover(srcLine(root, 5));
    root.querySelector('.kl-body')!.dispatchEvent(new MouseEvent('mouseleave'));
    expect(root.querySelectorAll('.kl-linked')).toHaveLength(0);
  });

  it('links a hovered generated line back to its user line', () => {
    const root = renderSource(SOURCE);
    hover(root.querySelectorAll('.kl-gen-line')[2]);
    expect(srcLine(root, 3).classList.contains('kl-linked')).toBe(true);
    expect(srcLine(root, 5).classList.contains('kl-linked')).toBe(false);
  });

  it('keeps the link on the other tab and pins it on click', () => {
    const root = renderSource(SOURCE);
    srcLine(root, 5).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    (root.querySelectorAll('.kl-tab')[1] as HTMLElement).click();
    expect(linkedGenerated(root)).toEqual([2]);
    expect(root.classList.contains('kl-pinned')).toBe(true);
  });

  it('shows a listing that could not be produced as its error, as text', () => {
    const root = renderSource(SOURCE);
    (root.querySelectorAll('.kl-tab')[2] as HTMLElement).click();
    expect(root.querySelector('.kl-error')!.textContent).toBe(`not available: ${XSS}`);
  });

  it('renders markup in names, source and errors as inert text', () => {
    const root = renderSource({ ...SOURCE, kernel: XSS });
    (root.querySelectorAll('.kl-tab')[2] as HTMLElement).click();
    expect(root.querySelector('img')).toBeNull();
    expect(root.querySelector('.kl-name')!.textContent).toBe(XSS);
    expect(root.textContent).toContain(`# ${XSS}`);
  });

  it('survives malformed data', () => {
    for (const bad of [null, 42, 'x', [], { listings: 'no', source: [1, null] }]) {
      const root = renderSource(bad);
      expect(root.classList.contains('kl-source')).toBe(true);
    }
  });

  it('dims the origin comment of a listing line', () => {
    const root = renderSource(SOURCE);
    const origin = root.querySelectorAll('.kl-gen-line')[2].querySelector('.kl-origin');
    expect(origin!.textContent!.trim()).toBe('# cell:3');
  });
});

describe('linkedLines', () => {
  it('lists the listing lines whose origin is the key', () => {
    const listing = readListing(SOURCE.listings[0]);
    expect(linkedLines(listing, originKey('cell', 5))).toEqual([3, 4, 5]);
    expect(linkedLines(listing, originKey('other.py', 5))).toEqual([]);
  });
});
