import { layoutTape, renderTape } from '../src/render/tape';
import { readTape } from '../src/types';
import { TAPE, XSS } from './fixtures';

function click(node: Element): void {
  node.dispatchEvent(new MouseEvent('click', { bubbles: true }));
}

describe('tape layout', () => {
  it('places records right of what they read and new versions right of them', () => {
    const layout = layoutTape(readTape(TAPE));
    const col = Object.fromEntries(layout.nodes.map(n => [n.id, n.col]));
    expect(col).toEqual({ 'a:x:0': 0, 'r:0': 1, 'a:y:1': 2, 'r:1': 3, [`a:${XSS}:1`]: 4 });
    expect(layout.edges).toContainEqual(['r:0', 'a:y:1']);
    expect(layout.last.get('y')).toBe('a:y:1');
  });

  it('places arrays no record touched in the first column', () => {
    const data = readTape({ ...TAPE, records: [] });
    expect(layoutTape(data).nodes.map(n => [n.id, n.col, n.row])).toEqual([
      ['a:x:0', 0, 0], ['a:y:0', 0, 1], [`a:${XSS}:0`, 0, 2]
    ]);
  });
});

describe('tape renderer', () => {
  it('draws a node per record and array version, with gradient norms', () => {
    const root = renderTape(TAPE);
    expect(root.querySelectorAll('g.kl-record')).toHaveLength(2);
    expect(root.querySelectorAll('g.kl-array')).toHaveLength(3);
    const norms = [...root.querySelectorAll('.kl-grad-norm')].map(n => n.textContent);
    expect(norms).toEqual(['|grad| 16.4317', '|grad| 10.9545', '|grad| 1']);
    expect(root.querySelector('table.kl-arrays')!.textContent).toContain('3, 6, 9, 12');
  });

  it('shows the adjoint listing of a clicked launch, linked to its source', () => {
    const root = renderTape(TAPE);
    click(root.querySelector('g.kl-record[data-record="0"]')!);
    const details = root.querySelector('.kl-details')!;
    expect(details.textContent).toContain('#0 power dim=4');
    expect(details.querySelector('.kl-source .kl-tab')!.textContent).toBe('IR (adjoint)');
    expect(details.querySelector('.kl-gen-line')!.textContent).toContain('adjoint kernel');
    expect(root.querySelector('g.kl-selected')!.getAttribute('data-record')).toBe('0');
  });

  it('shows the values and gradient of a clicked array', () => {
    const root = renderTape(TAPE);
    click(root.querySelector('g.kl-array[data-array="x"]')!);
    const rows = [...root.querySelectorAll('.kl-details tr')].map(r => r.textContent);
    expect(rows).toEqual(['indexvaluegrad', '00.53', '116', '21.59', '3212']);
  });

  it('renders markup in array and kernel names as inert text', () => {
    const root = renderTape(TAPE);
    click(root.querySelector('g.kl-record[data-record="1"]')!);
    expect(root.querySelector('img')).toBeNull();
    expect(root.querySelector('.kl-details .kl-name')!.textContent).toBe(XSS);
    expect(root.textContent).toContain(XSS.slice(0, 10));
    expect(root.querySelector('table.kl-arrays')!.textContent).toContain(XSS);
  });

  it('survives malformed data', () => {
    for (const bad of [null, {}, { records: [{ reads: 'x' }], arrays: [null] }]) {
      expect(renderTape(bad).classList.contains('kl-tape')).toBe(true);
    }
  });
});
