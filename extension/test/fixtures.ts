/** Payloads shaped as kernlab/notebook/mime.py writes them. */
export const XSS = '<img src=x onerror=alert(1)>';

export const SOURCE = {
  version: 1,
  kernel: 'saxpy',
  file: 'cell',
  first_line: 2,
  source: [
    'def saxpy(x: array(dtype=float32), y: array(dtype=float32), a: float32):',
    '    i = tid()',
    `    # ${XSS}`,
    '    y[i] = a * x[i] + y[i]'
  ],
  listings: [
    {
      target: 'ir',
      adjoint: false,
      title: 'IR',
      text: [
        'kernel saxpy(%x0, %y1, %a2) {   # cell:2',
        '  locals $i:int32',
        '  %i3:int32 = tid 0              # cell:3',
        '  %t4:float32 = %x0[%i3]         # cell:5',
        '  %t5:float32 = mul(%a2, %t4)    # cell:5',
        '  %y1[%i3] = %t5                 # cell:5',
        '}',
        ''
      ].join('\n'),
      error: '',
      origins: [['cell', 2], null, ['cell', 3], ['cell', 5], ['cell', 5], ['cell', 5], null]
    },
    {
      target: 'ir',
      adjoint: true,
      title: 'IR (adjoint)',
      text: 'adjoint kernel saxpy() {   # cell:2\n  %t1 = %adj_y[%i]   # cell:5\n}\n',
      error: '',
      origins: [['cell', 2], ['cell', 5], null]
    },
    {
      target: 'cuda',
      adjoint: false,
      title: 'CUDA C',
      text: '',
      error: `not available: ${XSS}`,
      origins: []
    }
  ]
};

export const TAPE = {
  version: 1,
  title: '<kernlab tape: 2 launches, 0 array ops, 3 arrays>',
  arrays: [
    { name: 'x', shape: [4], dtype: 'float32', device: 'cpu', size: 4, requires_grad: true,
      values: ['0.5', '1', '1.5', '2'], grad: ['3', '6', '9', '12'], grad_norm: '16.4317',
      truncated: false },
    { name: 'y', shape: [4], dtype: 'float32', device: 'cpu', size: 4, requires_grad: true,
      values: ['1', '2', '3', '4'], grad: ['2', '4', '6', '8'], grad_norm: '10.9545',
      truncated: false },
    { name: XSS, shape: [1], dtype: 'float32', device: 'cpu', size: 1, requires_grad: true,
      values: ['30'], grad: ['1'], grad_norm: '1', truncated: false }
  ],
  records: [
    { index: 0, kind: 'launch', label: 'power dim=4', reads: ['x'], writes: ['y'], kernel: 0 },
    { index: 1, kind: 'launch', label: 'square_sum dim=4', reads: ['y'], writes: [XSS],
      kernel: 1 }
  ],
  kernels: [
    { ...SOURCE, kernel: 'power', listings: [SOURCE.listings[1]] },
    { ...SOURCE, kernel: XSS, listings: [SOURCE.listings[1]] }
  ]
};
