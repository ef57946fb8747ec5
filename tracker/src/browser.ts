/**
 * The script-tag build (`t.js`): `window.ServiceTracker`, and with `data-api-key` on the script tag
 * the tracker starts by itself:
 *   <script src="/_sl/t.js" data-api-key="sl_live_..." async></script>
 * On a page twice (the template's snippet and a tag manager's), the second keeps the first's
 * `ServiceTracker`: its init with the same key is the same tracker, started once.
 */
import { ServiceTracker } from './index'

const Tracker = ((window as unknown as { ServiceTracker?: typeof ServiceTracker }).ServiceTracker ??= ServiceTracker)
/**
 * The tag this runs from: a classic script's `document.currentScript`. A module script has none
 * (`<script type="module" src="/_sl/t.js" data-api-key="…">`, as bundler habits paste it): it is taken
 * to be the page's first module script with a `data-api-key`. A module runs once per URL, so two such
 * tags (two keys) start one tracker either way: the first's, whatever the timing (an async module may
 * run before later tags are parsed, never before its own or those above it). Its `src` is where the
 * relay's prefix is read (index.ts's own reading of currentScript finds none in a module): the key
 * and where it sends come from one tag.
 */
const tag = (document.currentScript ?? document.querySelector('script[type=module][data-api-key]')) as HTMLScriptElement | null
const { apiKey, release } = tag?.dataset ?? {}
if (apiKey) Tracker.init(apiKey, { release }, { scriptUrl: tag!.src }).start()
