/**
 * application/vnd.kernlab.source+json: a kernel's source next to its listings, linked line
 * by line. Listings are grouped by target (IR, LLVM IR, CUDA C, PTX), one tab per target;
 * a tab shows the target's forward, adjoint and tangent listings side by side, in columns
 * that each scroll on their own (what ``kl.lab.inspect`` shows live). Hovering a user line
 * highlights the generated lines that came from it in every column (their origins, read
 * off the listing's `# file:line` / `// file:line:` comments by kernlab); hovering a
 * generated line highlights its user line and its siblings in every column; a click pins.
 * With side-by-side columns the kernel's source sits above them (the columns need the
 * width); a payload of one listing per tab keeps the source on the left.
 */
import { h } from './dom';
import { IListing, ISourceData, Origin, originKey, readSource } from '../types';

/** The trailing `# file:line` comment of a listing line, shown dimmed. */
const ORIGIN_TAIL = /\s*(?:#|;|\/\/)\s*(?:cell \[\d+\]|\S+):\d+\s*$/;

/** Tab titles of the targets kernlab lists (kernlab/notebook/display.py TARGET_TITLES). */
const TARGET_TITLES: Record<string, string> = {
  ir: 'IR', llvm: 'LLVM IR', 'llvm-opt': 'LLVM IR (optimised)', cuda: 'CUDA C', ptx: 'PTX'
};
/** The order of the columns in a tab. */
const KINDS = ['forward', 'adjoint', 'tangent'];

function keyOf(origin: Origin): string | null {
  return origin ? originKey(origin[0], origin[1]) : null;
}

/** Which of a target's listings this is: "forward", "adjoint" or "tangent" (forward mode;
 * a tangent of the adjoint counts as a tangent). */
export function kindOf(listing: IListing): string {
  return listing.tangent ? 'tangent' : listing.adjoint ? 'adjoint' : 'forward';
}

/** One tab: a target's listings, in column order. */
export interface IGroup {
  target: string;
  title: string;
  listings: IListing[];
}

/** The listings grouped by target, targets in the order they first appear, each group's
 * listings in the order forward, adjoint, tangent. A group of one listing is titled by the
 * listing ("IR (adjoint)"), a group of several by its target ("IR"). */
export function groupListings(listings: IListing[]): IGroup[] {
  const groups: IGroup[] = [];
  for (const listing of listings) {
    let group = groups.find(g => g.target === listing.target);
    if (!group) {
      group = { target: listing.target, title: '', listings: [] };
      groups.push(group);
    }
    group.listings.push(listing);
  }
  for (const group of groups) {
    group.listings.sort((a, b) => KINDS.indexOf(kindOf(a)) - KINDS.indexOf(kindOf(b)));
    group.title = group.listings.length === 1
      ? group.listings[0].title
      : TARGET_TITLES[group.target] ?? group.target;
  }
  return groups;
}

/** The 0-based lines of ``listing`` that came from the origin ``key``. */
export function linkedLines(listing: IListing, key: string): number[] {
  const out: number[] = [];
  listing.origins.forEach((origin, k) => {
    if (keyOf(origin) === key) {
      out.push(k);
    }
  });
  return out;
}

interface ILine {
  node: HTMLElement;
  key: string | null;
}

interface IColumn {
  listing: IListing;
  pane: HTMLElement | null; // null: the listing could not be produced
  lines: ILine[];
}

function codeLine(number: number, text: string, className: string): HTMLElement {
  const body = h('span', { className: 'kl-text' });
  const tail = ORIGIN_TAIL.exec(text);
  if (tail && tail.index > 0) {
    body.appendChild(document.createTextNode(text.slice(0, tail.index)));
    body.appendChild(h('span', { className: 'kl-origin', text: text.slice(tail.index) }));
  } else {
    body.textContent = text;
  }
  return h('div', { className: `kl-line ${className}` }, [
    h('span', { className: 'kl-lineno', text: String(number) }),
    body
  ]);
}

export function renderSource(value: unknown): HTMLElement {
  return new SourceView(readSource(value)).node;
}

export class SourceView {
  readonly node: HTMLElement;
  readonly groups: IGroup[];
  private data: ISourceData;
  private active: number;
  private pinned: string | null = null;
  private userLines = new Map<string, ILine>();
  private columns: IColumn[] = [];
  private genPane: HTMLElement;
  private tabs: HTMLButtonElement[] = [];
  private status: HTMLElement;

  constructor(data: ISourceData) {
    this.data = data;
    this.groups = groupListings(data.listings);
    const ok = this.groups.findIndex(g => g.listings.some(l => !l.error));
    this.active = ok >= 0 ? ok : 0;
    const wide = this.groups.some(g => g.listings.length > 1);
    this.node = h('div', { className: `kl-source ${wide ? 'kl-stacked' : 'kl-beside'}` });
    this.status = h('span', { className: 'kl-status' });
    const header = h('div', { className: 'kl-header' }, [
      h('span', { className: 'kl-kind', text: 'kernel ' }),
      h('code', { className: 'kl-name', text: data.kernel }),
      this.status
    ]);
    const userPane = this.renderUser();
    this.genPane = h('div', { className: 'kl-columns' });
    const tabBar = h('div', { className: 'kl-tabs' });
    this.groups.forEach((group, k) => {
      const tab = h('button', { className: 'kl-tab', text: group.title });
      tab.type = 'button';
      tab.addEventListener('click', () => this.show(k));
      this.tabs.push(tab);
      tabBar.appendChild(tab);
    });
    const right = h('div', { className: 'kl-pane kl-listings' }, [tabBar, this.genPane]);
    const body = h('div', { className: 'kl-body' }, [userPane, right]);
    body.addEventListener('mouseover', event => this.onHover(event));
    body.addEventListener('mouseleave', () => this.link(this.pinned));
    body.addEventListener('click', event => this.onClick(event));
    this.node.append(header, body);
    this.show(this.active);
  }

  private renderUser(): HTMLElement {
    const { source, firstLine, file } = this.data;
    const pane = h('div', { className: 'kl-code kl-user' });
    if (!source.length) {
      pane.appendChild(h('div', { className: 'kl-note', text: '(no source available)' }));
    }
    const generating = new Set<string>();
    for (const listing of this.data.listings) {
      for (const origin of listing.origins) {
        const key = keyOf(origin);
        if (key) {
          generating.add(key);
        }
      }
    }
    source.forEach((text, k) => {
      const number = firstLine + k;
      const key = originKey(file, number);
      const node = codeLine(number, text, 'kl-src-line');
      node.dataset.line = String(number);
      if (generating.has(key)) {
        node.classList.add('kl-has-code');
        this.userLines.set(key, { node, key });
      }
      pane.appendChild(node);
    });
    const title = h('div', { className: 'kl-pane-title', text: file || 'source' });
    return h('div', { className: 'kl-pane kl-user-pane' }, [title, pane]);
  }

  /** The title of the tab shown now. */
  get activeTitle(): string {
    return this.groups[this.active]?.title ?? '';
  }

  /** Shows tab ``k``: its listings side by side. */
  show(k: number): void {
    this.active = k;
    this.tabs.forEach((tab, j) => {
      tab.classList.toggle('kl-active', j === k);
      tab.setAttribute('aria-selected', j === k ? 'true' : 'false');
    });
    const group = this.groups[k];
    this.columns = [];
    this.genPane.replaceChildren();
    if (!group) {
      this.genPane.appendChild(h('div', { className: 'kl-note', text: '(no listings)' }));
      this.link(this.pinned);
      return;
    }
    const several = group.listings.length > 1;
    this.genPane.style.gridTemplateColumns = `repeat(${group.listings.length}, minmax(0, 1fr))`;
    for (const listing of group.listings) {
      const column = h('div', { className: 'kl-column', data: { kind: kindOf(listing) } });
      if (several) {
        column.appendChild(h('div', { className: 'kl-pane-title', text: kindOf(listing) }));
      }
      if (listing.error) {
        column.appendChild(h('pre', { className: 'kl-error', text: listing.error }));
        this.columns.push({ listing, pane: null, lines: [] });
      } else {
        const pane = h('div', { className: 'kl-code kl-generated' });
        const lines: ILine[] = [];
        listing.text.replace(/\n$/, '').split('\n').forEach((text, j) => {
          const node = codeLine(j + 1, text, 'kl-gen-line');
          const key = keyOf(listing.origins[j] ?? null);
          if (key) {
            node.classList.add('kl-has-origin');
          }
          lines.push({ node, key });
          pane.appendChild(node);
        });
        column.appendChild(pane);
        this.columns.push({ listing, pane, lines });
      }
      this.genPane.appendChild(column);
    }
    this.link(this.pinned);
  }

  private lineAt(event: Event): ILine | null {
    const node = (event.target as Element | null)?.closest?.('.kl-line');
    if (!node) {
      return null;
    }
    for (const line of this.userLines.values()) {
      if (line.node === node) {
        return line;
      }
    }
    for (const column of this.columns) {
      const line = column.lines.find(l => l.node === node);
      if (line) {
        return line;
      }
    }
    return null;
  }

  private onHover(event: Event): void {
    const line = this.lineAt(event);
    this.link(line?.key ?? this.pinned);
  }

  private onClick(event: Event): void {
    const line = this.lineAt(event);
    if (!line?.key) {
      return;
    }
    this.pinned = this.pinned === line.key ? null : line.key;
    this.node.classList.toggle('kl-pinned', this.pinned !== null);
    this.link(line.key);
  }

  /** Highlights the user line ``key`` and, in every column, the generated lines that came
   * from it; each column scrolls its first such line into view. */
  link(key: string | null): void {
    for (const line of this.userLines.values()) {
      line.node.classList.toggle('kl-linked', key !== null && line.key === key);
    }
    const counts: string[] = [];
    for (const column of this.columns) {
      const linked = column.lines.filter(line => key !== null && line.key === key);
      for (const line of column.lines) {
        line.node.classList.toggle('kl-linked', key !== null && line.key === key);
      }
      if (column.pane) {
        const n = linked.length;
        counts.push(`${n} line${n === 1 ? '' : 's'} ${this.columns.length > 1
          ? kindOf(column.listing) : `of ${this.activeTitle}`}`);
      }
      const first = linked[0]?.node;
      const pane = column.pane;
      if (first && pane && (first.offsetTop < pane.scrollTop ||
          first.offsetTop > pane.scrollTop + pane.clientHeight - 20)) {
        pane.scrollTop = Math.max(0, first.offsetTop - pane.clientHeight / 3);
      }
    }
    if (key === null) {
      this.status.textContent = '';
    } else {
      const number = key.split('\u0000')[1];
      const where = this.columns.length > 1 ? ` of ${this.activeTitle}` : '';
      this.status.textContent = ` · line ${number} → ${counts.join(', ')}${where}`;
    }
  }
}
