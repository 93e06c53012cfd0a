/**
 * application/vnd.kernlab.source+json: a kernel's source next to its listings, linked line
 * by line. Hovering a user line highlights the generated lines that came from it (their
 * origins, read off the listing's `# file:line` / `// file:line:` comments by kernlab);
 * hovering a generated line highlights its user line and its siblings; a click pins.
 */
import { h } from './dom';
import { IListing, ISourceData, Origin, originKey, readSource } from '../types';

/** The trailing `# file:line` comment of a listing line, shown dimmed. */
const ORIGIN_TAIL = /\s*(?:#|;|\/\/)\s*(?:cell \[\d+\]|\S+):\d+\s*$/;

function keyOf(origin: Origin): string | null {
  return origin ? originKey(origin[0], origin[1]) : null;
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
  private data: ISourceData;
  private active: number;
  private pinned: string | null = null;
  private userLines = new Map<string, ILine>();
  private genLines: ILine[] = [];
  private genPane: HTMLElement;
  private tabs: HTMLButtonElement[] = [];
  private status: HTMLElement;

  constructor(data: ISourceData) {
    this.data = data;
    const ok = data.listings.findIndex(l => !l.error);
    this.active = ok >= 0 ? ok : 0;
    this.node = h('div', { className: 'kl-source' });
    this.status = h('span', { className: 'kl-status' });
    const header = h('div', { className: 'kl-header' }, [
      h('span', { className: 'kl-kind', text: 'kernel ' }),
      h('code', { className: 'kl-name', text: data.kernel }),
      this.status
    ]);
    const userPane = this.renderUser();
    this.genPane = h('div', { className: 'kl-code kl-generated' });
    const tabBar = h('div', { className: 'kl-tabs' });
    data.listings.forEach((listing, k) => {
      const tab = h('button', { className: 'kl-tab', text: listing.title });
      tab.type = 'button';
      tab.addEventListener('click', () => this.show(k));
      this.tabs.push(tab);
      tabBar.appendChild(tab);
    });
    const right = h('div', { className: 'kl-pane' }, [tabBar, this.genPane]);
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
    return h('div', { className: 'kl-pane' }, [title, pane]);
  }

  /** Shows listing ``k`` in the right pane. */
  show(k: number): void {
    this.active = k;
    this.tabs.forEach((tab, j) => {
      tab.classList.toggle('kl-active', j === k);
      tab.setAttribute('aria-selected', j === k ? 'true' : 'false');
    });
    const listing = this.data.listings[k];
    this.genLines = [];
    this.genPane.replaceChildren();
    if (!listing) {
      this.genPane.appendChild(h('div', { className: 'kl-note', text: '(no listings)' }));
    } else if (listing.error) {
      this.genPane.appendChild(h('pre', { className: 'kl-error', text: listing.error }));
    } else {
      const lines = listing.text.replace(/\n$/, '').split('\n');
      lines.forEach((text, j) => {
        const node = codeLine(j + 1, text, 'kl-gen-line');
        const key = keyOf(listing.origins[j] ?? null);
        if (key) {
          node.classList.add('kl-has-origin');
        }
        this.genLines.push({ node, key });
        this.genPane.appendChild(node);
      });
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
    return this.genLines.find(line => line.node === node) ?? null;
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

  /** Highlights the user line ``key`` and the generated lines that came from it. */
  link(key: string | null): void {
    for (const line of [...this.userLines.values(), ...this.genLines]) {
      line.node.classList.toggle('kl-linked', key !== null && line.key === key);
    }
    const linked = key === null ? [] : this.genLines.filter(line => line.key === key);
    if (key === null) {
      this.status.textContent = '';
    } else {
      const number = key.split('\u0000')[1];
      const title = this.data.listings[this.active]?.title ?? '';
      const n = linked.length;
      this.status.textContent = ` · line ${number} → ${n} line${n === 1 ? '' : 's'} of ${title}`;
    }
    const first = linked[0]?.node;
    if (first && (first.offsetTop < this.genPane.scrollTop ||
        first.offsetTop > this.genPane.scrollTop + this.genPane.clientHeight - 20)) {
      this.genPane.scrollTop = Math.max(0, first.offsetTop - this.genPane.clientHeight / 3);
    }
  }
}
