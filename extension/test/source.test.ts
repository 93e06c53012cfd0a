import { groupListings, kindOf, renderSource, linkedLines } from '../src/render/source';
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
    // forward (7 lines) and adjoint (3) side by side under one IR tab
    expect(root.querySelectorAll('.kl-gen-line')).toHaveLength(10);
    expect(root.querySelector('.kl-tab.kl-active')!.textContent).toBe('IR');
    expect([...root.querySelectorAll('.kl-tab')].map(t => t.textContent)).toEqual(['IR', 'CUDA C']);
    const columns = [...root.querySelectorAll('.kl-column')] as HTMLElement[];
    expect(columns.map(c => c.dataset.kind)).toEqual(['forward', 'adjoint']);
    expect(columns.map(c => c.querySelectorAll('.kl-gen-line').length)).toEqual([7, 3]);
    expect(root.classList.contains('kl-stacked')).toBe(true);
  });

  it('highlights the generated lines that came from a hovered user line', () => {
    const root = renderSource(SOURCE);
    hover(srcLine(root, 5));
    // forward lines 4-6 and adjoint line 2 (the 9th generated line on the page)
    expect(linkedGenerated(root)).toEqual([4, 5, 6, 9]);
    expect(srcLine(root, 5).classList.contains('kl-linked')).toBe(true);
    expect(root.querySelector('.kl-status')!.textContent)
      .toContain('line 5 → 3 lines forward, 1 line adjoint of IR');
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

  it('links a hovered adjoint line to its user line and its forward siblings', () => {
    const root = renderSource(SOURCE);
    const adjoint = root.querySelectorAll('.kl-column')[1];
    hover(adjoint.querySelectorAll('.kl-gen-line')[1]);
    expect(srcLine(root, 5).classList.contains('kl-linked')).toBe(true);
    expect(linkedGenerated(root)).toEqual([4, 5, 6, 9]);
  });

  it('keeps the link on the other tab and pins it on click', () => {
    const root = renderSource(SOURCE);
    srcLine(root, 5).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    (root.querySelectorAll('.kl-tab')[1] as HTMLElement).click();
    expect(linkedGenerated(root)).toEqual([]);
    (root.querySelectorAll('.kl-tab')[0] as HTMLElement).click();
    expect(linkedGenerated(root)).toEqual([4, 5, 6, 9]);
    expect(root.classList.contains('kl-pinned')).toBe(true);
  });

  it('shows the tangent listing beside forward and adjoint', () => {
    const tangent = {
      target: 'ir', adjoint: false, tangent: true, title: 'IR (tangent)',
      text: 'kernel saxpy() {   # cell:2\n  %t9 = %tan_x[%i]   # cell:5\n  %t10 = mul(%a, %t9)   # cell:5\n}\n',
      error: '', origins: [['cell', 2], ['cell', 5], ['cell', 5], null]
    };
    // in the payload's order tangent comes first: the columns are still forward, adjoint, tangent
    const root = renderSource({ ...SOURCE, listings: [tangent, ...SOURCE.listings] });
    const columns = [...root.querySelectorAll('.kl-column')] as HTMLElement[];
    expect(columns.map(c => c.dataset.kind)).toEqual(['forward', 'adjoint', 'tangent']);
    expect(columns.map(c => c.querySelector('.kl-pane-title')!.textContent))
      .toEqual(['forward', 'adjoint', 'tangent']);
    hover(srcLine(root, 5));
    expect(columns[2].querySelectorAll('.kl-gen-line.kl-linked')).toHaveLength(2);
    expect(root.querySelector('.kl-status')!.textContent)
      .toContain('3 lines forward, 1 line adjoint, 2 lines tangent of IR');
  });

  it('keeps one listing beside the source, titled by the listing', () => {
    const root = renderSource({ ...SOURCE, listings: [SOURCE.listings[1]] });
    expect(root.classList.contains('kl-beside')).toBe(true);
    expect(root.querySelector('.kl-tab')!.textContent).toBe('IR (adjoint)');
    expect(root.querySelector('.kl-column .kl-pane-title')).toBeNull();
    hover(srcLine(root, 5));
    expect(root.querySelector('.kl-status')!.textContent).toContain('line 5 → 1 line of IR (adjoint)');
  });

  it('shows a listing that could not be produced as its error, as text', () => {
    const root = renderSource(SOURCE);
    (root.querySelectorAll('.kl-tab')[1] as HTMLElement).click();
    expect(root.querySelector('.kl-error')!.textContent).toBe(`not available: ${XSS}`);
  });

  it('renders markup in names, source and errors as inert text', () => {
    const root = renderSource({ ...SOURCE, kernel: XSS });
    (root.querySelectorAll('.kl-tab')[1] as HTMLElement).click();
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

describe('groupListings', () => {
  it('makes one tab per target, forward, adjoint and tangent in that order', () => {
    const l = (target: string, adjoint: boolean, tangent: boolean) =>
      readListing({ target, adjoint, tangent, title: `${target}${adjoint}${tangent}` });
    const groups = groupListings([l('ptx', true, false), l('ir', false, true), l('ptx', false, false),
      l('ir', true, false), l('ir', false, false)]);
    expect(groups.map(g => g.title)).toEqual(['PTX', 'IR']);
    expect(groups[1].listings.map(kindOf)).toEqual(['forward', 'adjoint', 'tangent']);
    expect(groups[0].listings.map(kindOf)).toEqual(['forward', 'adjoint']);
    expect(kindOf(l('ir', true, true))).toBe('tangent');
  });
});
