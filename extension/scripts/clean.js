// Removes what the build makes (no rimraf dependency): the compiled lib and the labextension.
const fs = require('fs');
for (const path of ['lib', 'labextension', 'tsconfig.tsbuildinfo']) {
  fs.rmSync(path, { recursive: true, force: true });
}
