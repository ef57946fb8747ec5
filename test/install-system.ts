/**
 * Run before the test suite (`npm test`'s pretest): what it drives besides npm's packages, installed
 * from Debian when missing, as root or with sudo, as .ci/run and the bench do. Chromium, for the
 * tests in a real browser; the shells of Firefox's and Safari's JavaScript engines, whose own stacks
 * the symbolication tests read.
 */
import { ensureDebianPackage } from './bench/lib/system'

for (const [binary, pkg] of [
  ['chromium', 'chromium'],
  ['js102', 'libmozjs-102-dev'],
  ['jsc', 'libjavascriptcoregtk-4.0-bin'],
]) {
  try {
    await ensureDebianPackage(binary, pkg)
  } catch (error) {
    console.error(`The tests need ${binary} (Debian's ${pkg}), which could not be installed:\n${(error as Error).message}`)
    process.exit(1)
  }
}
