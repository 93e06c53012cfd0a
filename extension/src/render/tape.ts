/**
 * application/vnd.kernlab.tape+json: a Tape as a dataflow graph. Array versions are
 * ellipses (each write makes a new version, labelled name@version: a prime would read as a derivative), records are boxes; the
 * latest version of each array shows its gradient norm. Clicking a launch shows its
 * adjoint listing linked to the kernel's source; clicking an array shows its values and
 * gradient, element by element.
 */
import { h, s } from './dom';
import { SourceView } from './source';
import { IArrayData, IRecordData, ITapeData, readTape } from '../types';

export interface INode {
  id: string;
  kind: 'array' | 'record';
  name: string; // the array's name, or the record's label
  version: number;
  record: number | null;
  col: number;
  row: number;
}

export interface ILayout {
  nodes: INode[];
  edges: [string, string][];
  last: Map<string, string>; // array name -> id of its latest version
}

/** Columns follow the data flow: a record sits right of what it reads, and what it
 * writes right of it; rows are filled in order within each column. */
export function layoutTape(data: ITapeData): ILayout {
  const nodes: INode[] = [];
  const byId = new Map<string, INode>();
  const edges: [string, string][] = [];
  const version = new Map<string, number>();
  const last = new Map<string, string>();
  const arrayNode = (name: string): INode => {
    const v = version.get(name) ?? 0;
    const id = `a:${name}:${v}`;
    let node = byId.get(id);
    if (!node) {
      node = { id, kind: 'array', name, version: v, record: null, col: 0, row: 0 };
      nodes.push(node);
      byId.set(id, node);
    }
    last.set(name, id);
    return node;
  };
  data.records.forEach((rec: IRecordData, k: number) => {
    const inputs = rec.reads.map(arrayNode);
    const node: INode = {
      id: `r:${k}`,
      kind: 'record',
      name: rec.label,
      version: 0,
      record: k,
      col: 1 + Math.max(0, ...inputs.map(n => n.col)),
      row: 0
    };
    nodes.push(node);
    byId.set(node.id, node);
    inputs.forEach(n => edges.push([n.id, node.id]));
    for (const name of rec.writes) {
      version.set(name, (version.get(name) ?? 0) + 1);
      const out = arrayNode(name);
      out.col = node.col + 1;
      edges.push([node.id, out.id]);
    }
  });
  data.arrays.forEach(a => {
    if (!last.has(a.name)) {
      arrayNode(a.name);
    }
  });
  const rows = new Map<number, number>();
  for (const node of nodes) {
    node.row = rows.get(node.col) ?? 0;
    rows.set(node.col, node.row + 1);
  }
  return { nodes, edges, last };
}

const COL = 180;
const ROW = 62;
const W = 140;
const H = 28;

function clip(text: string, n = 20): string {
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

function versioned(name: string, v: number): string {
  return v > 0 ? `${name}@${v}` : name;
}

export function renderTape(value: unknown): HTMLElement {
  return new TapeView(readTape(value)).node;
}

export class TapeView {
  readonly node: HTMLElement;
  private data: ITapeData;
  private details: HTMLElement;
  private shapes = new Map<string, SVGGElement>();

  constructor(data: ITapeData) {
    this.data = data;
    this.node = h('div', { className: 'kl-tape' });
    this.details = h('div', { className: 'kl-details' }, [
      h('div', {
        className: 'kl-note',
        text: 'Click a launch to see its adjoint listing, or an array for its gradient.'
      })
    ]);
    this.node.append(
      h('div', { className: 'kl-header', text: data.title }),
      h('div', { className: 'kl-graph' }, [this.graph()]),
      this.details,
      this.table()
    );
  }

  private arrayOf(name: string): IArrayData | undefined {
    return this.data.arrays.find(a => a.name === name);
  }

  private graph(): SVGSVGElement {
    const layout = layoutTape(this.data);
    const pos = new Map<string, [number, number]>();
    let width = 0;
    let height = 0;
    for (const node of layout.nodes) {
      const x = 16 + node.col * COL;
      const y = 16 + node.row * ROW;
      pos.set(node.id, [x, y]);
      width = Math.max(width, x + W + 16);
      height = Math.max(height, y + ROW);
    }
    // The viewBox lets CSS (max-width: 100%) shrink a long tape to fit its output.
    const svg = s('svg', {
      width, height, viewBox: `0 0 ${width} ${height}`, class: 'kl-tape-svg', role: 'img'
    });
    const defs = s('defs');
    const marker = s('marker', {
      id: 'kl-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5,
      markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse'
    });
    marker.appendChild(s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'kl-arrowhead' }));
    defs.appendChild(marker);
    svg.appendChild(defs);
    for (const [a, b] of layout.edges) {
      const [x1, y1] = pos.get(a)!;
      const [x2, y2] = pos.get(b)!;
      svg.appendChild(s('path', {
        d: `M ${x1 + W} ${y1 + H / 2} C ${x1 + W + 20} ${y1 + H / 2}, ${x2 - 20} ` +
          `${y2 + H / 2}, ${x2} ${y2 + H / 2}`,
        class: 'kl-edge', 'marker-end': 'url(#kl-arrow)'
      }));
    }
    for (const node of layout.nodes) {
      const [x, y] = pos.get(node.id)!;
      const g = s('g', { class: `kl-node kl-${node.kind}`, tabindex: 0 });
      const title = s('title');
      if (node.kind === 'record') {
        const rec = this.data.records[node.record!];
        g.dataset.record = String(rec.index);
        g.appendChild(s('rect', { x, y, width: W, height: H, rx: 6 }));
        const name = rec.kernel !== null ? this.data.kernels[rec.kernel]?.kernel : rec.kind;
        g.appendChild(s('text', { x: x + W / 2, y: y + 18, 'text-anchor': 'middle' },
          clip(`#${rec.index} ${name ?? rec.kind}`)));
        title.textContent = rec.label;
      } else {
        g.dataset.array = node.name;
        g.appendChild(s('ellipse', { cx: x + W / 2, cy: y + H / 2, rx: W / 2, ry: H / 2 }));
        g.appendChild(s('text', { x: x + W / 2, y: y + 18, 'text-anchor': 'middle' },
          clip(versioned(node.name, node.version))));
        const array = this.arrayOf(node.name);
        if (layout.last.get(node.name) === node.id && array?.gradNorm) {
          g.appendChild(s('text', { x: x + W / 2, y: y + H + 14, 'text-anchor': 'middle',
            class: 'kl-grad-norm' }, `|grad| ${array.gradNorm}`));
        }
        title.textContent = array ? `${array.name}: ${array.dtype} ${JSON.stringify(array.shape)}`
          : node.name;
      }
      g.insertBefore(title, g.firstChild);
      g.addEventListener('click', () => this.select(node));
      g.addEventListener('keydown', event => {
        if ((event as KeyboardEvent).key === 'Enter') {
          this.select(node);
        }
      });
      this.shapes.set(node.id, g);
      svg.appendChild(g);
    }
    return svg;
  }

  private table(): HTMLElement {
    const head = h('tr', {}, ['array', 'shape', 'dtype', '|grad|', 'grad'].map(
      t => h('th', { text: t })));
    const rows = this.data.arrays.map(a => h('tr', {}, [
      h('td', { text: a.name }),
      h('td', { text: `(${a.shape.join(', ')})` }),
      h('td', { text: a.dtype }),
      h('td', { text: a.gradNorm ?? '-' }),
      h('td', { text: a.grad ? a.grad.join(', ') + (a.truncated ? ', …' : '') : '-' })
    ]));
    return h('table', { className: 'kl-arrays' }, [head, ...rows]);
  }

  /** Shows what a node holds in the details pane and marks it selected. */
  select(node: INode): void {
    for (const [id, g] of this.shapes) {
      g.classList.toggle('kl-selected', id === node.id);
    }
    this.details.replaceChildren();
    if (node.kind === 'record') {
      const rec = this.data.records[node.record!];
      this.details.appendChild(h('div', { className: 'kl-details-title',
        text: `#${rec.index} ${rec.label} · reads ${rec.reads.join(', ') || '-'} · writes ` +
          `${rec.writes.join(', ') || '-'}` }));
      const kernel = rec.kernel !== null ? this.data.kernels[rec.kernel] : undefined;
      if (kernel) {
        this.details.appendChild(new SourceView(kernel).node);
      } else {
        const what = rec.kind === 'clone' ? '' : '; that part of it is zeroed';
        this.details.appendChild(h('div', { className: 'kl-note',
          text: `adjoint: grad of ${rec.reads[0] ?? '?'} += grad of ${rec.writes[0] ?? '?'}${what}` }));
      }
      return;
    }
    const a = this.arrayOf(node.name);
    if (!a) {
      return;
    }
    this.details.appendChild(h('div', { className: 'kl-details-title',
      text: `${a.name} · ${a.dtype} (${a.shape.join(', ')}) on ${a.device} · |grad| ` +
        `${a.gradNorm ?? '-'}` }));
    const head = h('tr', {}, ['index', 'value', 'grad'].map(t => h('th', { text: t })));
    const rows = a.values.map((v, k) => h('tr', {}, [
      h('td', { text: String(k) }), h('td', { text: v }),
      h('td', { text: a.grad ? a.grad[k] ?? '' : '-' })
    ]));
    this.details.appendChild(h('table', { className: 'kl-arrays kl-elements' }, [head, ...rows]));
    if (a.truncated) {
      this.details.appendChild(h('div', { className: 'kl-note',
        text: `first ${a.values.length} of ${a.size} elements` }));
    }
  }
}
