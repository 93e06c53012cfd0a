/**
 * The payloads of kernlab's MIME types, as kernlab/notebook/mime.py builds them.
 *
 * Output data is untrusted (a notebook may come from anywhere), so nothing here is taken
 * on faith: the readers below coerce every field to the type the renderers expect, and
 * the renderers put every string into the page as text, never as HTML.
 */

export const SOURCE_MIME = 'application/vnd.kernlab.source+json';
export const TAPE_MIME = 'application/vnd.kernlab.tape+json';

/** The user line a generated line came from: [file key, line], or null. */
export type Origin = [string, number] | null;

export interface IListing {
  target: string;
  adjoint: boolean;
  /** A forward-mode (tangent) listing; with ``adjoint``, the tangent of the adjoint. */
  tangent: boolean;
  title: string;
  text: string;
  error: string;
  origins: Origin[];
}

export interface ISourceData {
  kernel: string;
  file: string;
  firstLine: number;
  source: string[];
  listings: IListing[];
}

export interface IArrayData {
  name: string;
  shape: number[];
  dtype: string;
  device: string;
  size: number;
  requiresGrad: boolean;
  values: string[];
  grad: string[] | null;
  gradNorm: string | null;
  truncated: boolean;
}

export interface IRecordData {
  index: number;
  kind: string;
  label: string;
  reads: string[];
  writes: string[];
  kernel: number | null;
}

export interface ITapeData {
  title: string;
  arrays: IArrayData[];
  records: IRecordData[];
  kernels: ISourceData[];
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Json)
    : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function str(value: unknown, fallback = ''): string {
  if (typeof value === 'string') {
    return value;
  }
  if (typeof value === 'number' || typeof value === 'boolean') {
    return String(value);
  }
  return fallback;
}

export function int(value: unknown, fallback = 0): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : fallback;
}

function origin(value: unknown): Origin {
  if (Array.isArray(value) && value.length === 2 && typeof value[1] === 'number') {
    return [str(value[0]), int(value[1])];
  }
  return null;
}

export function readListing(value: unknown): IListing {
  const o = obj(value);
  return {
    target: str(o.target, 'ir'),
    adjoint: o.adjoint === true,
    tangent: o.tangent === true,
    title: str(o.title, str(o.target, 'listing')),
    text: str(o.text),
    error: str(o.error),
    origins: list(o.origins).map(origin)
  };
}

export function readSource(value: unknown): ISourceData {
  const o = obj(value);
  return {
    kernel: str(o.kernel, '?'),
    file: str(o.file),
    firstLine: int(o.first_line, 1),
    source: list(o.source).map(line => str(line)),
    listings: list(o.listings).map(readListing)
  };
}

function readArray(value: unknown): IArrayData {
  const o = obj(value);
  return {
    name: str(o.name, '?'),
    shape: list(o.shape).map(n => int(n)),
    dtype: str(o.dtype),
    device: str(o.device),
    size: int(o.size),
    requiresGrad: o.requires_grad === true,
    values: list(o.values).map(v => str(v)),
    grad: Array.isArray(o.grad) ? o.grad.map(v => str(v)) : null,
    gradNorm: o.grad_norm === null || o.grad_norm === undefined ? null : str(o.grad_norm),
    truncated: o.truncated === true
  };
}

function readRecord(value: unknown, k: number): IRecordData {
  const o = obj(value);
  return {
    index: int(o.index, k),
    kind: str(o.kind, 'launch'),
    label: str(o.label),
    reads: list(o.reads).map(v => str(v)),
    writes: list(o.writes).map(v => str(v)),
    kernel: typeof o.kernel === 'number' ? int(o.kernel) : null
  };
}

export function readTape(value: unknown): ITapeData {
  const o = obj(value);
  return {
    title: str(o.title, 'kernlab tape'),
    arrays: list(o.arrays).map(readArray),
    records: list(o.records).map(readRecord),
    kernels: list(o.kernels).map(readSource)
  };
}

/** A key that identifies an origin, for lookups. */
export function originKey(file: string, line: number): string {
  return `${file}\u0000${line}`;
}
