/** `upload-sourcemaps --release R --api-key K [--url BASE] DIR` (see ./upload.ts). */
import { uploadSourcemaps } from './upload'

process.exitCode = await uploadSourcemaps(process.argv.slice(2), {
  fetch: (input, init) => fetch(input, init),
  out: process.stdout,
  err: process.stderr,
  env: process.env,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
})
